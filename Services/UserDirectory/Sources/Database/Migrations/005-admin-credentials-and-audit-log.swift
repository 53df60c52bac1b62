extension Migration {
    static let adminCredentialsAndAuditLog = Migration(
        version: 5, name: "admin_credentials_and_audit_log",
        statements: [
            // Admin credentials: project-wide (tenant_id NULL) or for one tenant. Only the SHA-256
            // of the secret is kept; the secret is shown once, when it is created.
            """
            CREATE TABLE admin_credentials (
                credential_id text PRIMARY KEY,
                tenant_id text REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                display_name text NOT NULL DEFAULT '',
                secret_hash text NOT NULL UNIQUE,
                created_at timestamptz NOT NULL DEFAULT now(),
                revoked_at timestamptz
            )
            """,
            // Every admin write: who (credential id, never the secret), what, which tenant
            // ('' = project level), when, and the request id.
            """
            CREATE TABLE audit_log (
                id bigserial PRIMARY KEY,
                tenant_id text NOT NULL,
                time timestamptz NOT NULL DEFAULT now(),
                actor text NOT NULL,
                action text NOT NULL,
                target text NOT NULL,
                request_id text NOT NULL
            )
            """,
            "CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, id)",
        ])
}
