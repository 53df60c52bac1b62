extension Migration {
    static let refreshFamiliesHotRevocation = Migration(
        version: 10, name: "refresh_families_hot_revocation",
        statements: [
            // Revoking a session (a deleted user's, in bulk by the cleanup) only sets revoked_at and
            // revoked_reason. Without an index on revoked_at and with room on every page for a
            // second version of each row, that is a HOT update: no new index entries. It was 70%
            // of the cleanup's batch statement (a new row version with five index entries per
            // session). Housekeeping finds revoked sessions by scanning a scope's sessions.
            // fillfactor applies to pages written from now on.
            "DROP INDEX refresh_families_revoked_idx",
            "ALTER TABLE refresh_families SET (fillfactor = 50)",
        ])
}
