extension Migration {
    static let initialEmail = Migration(
        version: 18, name: "initial_email",
        statements: [
            // The first address a user had before changing it (docs/protocol/accounts.md#the-user-record
            // `initialEmail`, issue 36): set with the first email-change notice (docs/design-notes.md,
            // "Out-of-band codes and mail"), never changed afterwards. NULL: never changed.
            "ALTER TABLE users ADD COLUMN initial_email text"
        ])
}
