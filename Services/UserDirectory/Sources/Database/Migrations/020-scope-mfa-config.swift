extension Migration {
    static let scopeMfaConfig = Migration(
        version: 20, name: "scope_mfa_config",
        statements: [
            // A scope's multi-factor settings as given (Tenant `mfaConfig`, Config `mfa`), JSON;
            // NULL = the defaults (DISABLED, no providers). docs/design-notes.md, "Tenants and settings".
            "ALTER TABLE tenants ADD COLUMN mfa_config text"
        ])
}
