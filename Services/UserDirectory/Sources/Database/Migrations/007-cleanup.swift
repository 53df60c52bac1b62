extension Migration {
    static let cleanup = Migration(
        version: 7, name: "cleanup",
        statements: [
            // The sweep lease: one worker sweeps at a time. `token` grows with every acquisition
            // and fences a worker that lost its lease; it doubles as the sweep id.
            """
            CREATE TABLE cleanup_lease (
                name text PRIMARY KEY,
                holder text,
                token bigint NOT NULL DEFAULT 0,
                expires_at timestamptz
            )
            """,
            "INSERT INTO cleanup_lease (name) VALUES ('anonymous-cleanup')",
            """
            CREATE TABLE cleanup_sweeps (
                sweep_id bigint PRIMARY KEY,
                holder text NOT NULL,
                started_at timestamptz NOT NULL DEFAULT now(),
                finished_at timestamptz,
                deleted bigint NOT NULL DEFAULT 0
            )
            """,
            // Per scope: what the sweeps removed (docs/protocol/admin.md#tesseras-own-admin-resources
            // anonymousCleanup).
            """
            CREATE TABLE cleanup_stats (
                tenant_id text PRIMARY KEY REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                last_sweep_id bigint,
                last_sweep_at timestamptz,
                last_sweep_deleted bigint NOT NULL DEFAULT 0,
                total_deleted bigint NOT NULL DEFAULT 0
            )
            """,
            // Housekeeping finds what it prunes per scope through these.
            "CREATE INDEX refresh_families_expiry_idx ON refresh_families (tenant_id, expires_at)",
            "CREATE INDEX refresh_families_idle_idx ON refresh_families (tenant_id, last_used_at)",
            """
            CREATE INDEX refresh_families_revoked_idx ON refresh_families (tenant_id, revoked_at)
                WHERE revoked_at IS NOT NULL
            """,
            "CREATE INDEX oob_codes_expiry_idx ON oob_codes (tenant_id, expires_at)",
            """
            CREATE INDEX mail_outbox_delivered_idx ON mail_outbox (tenant_id, delivered_at)
                WHERE delivered_at IS NOT NULL
            """,
        ])
}
