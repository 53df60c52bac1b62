extension Migration {
    static let consoleSessions = Migration(
        version: 15, name: "console_sessions",
        statements: [
            // The admin console's sessions (issue #25), found by the SHA-256 of the cookie's
            // random value. A session lives while the credential it was opened with does: the
            // credential's hash is kept to tell (a revoked or deleted credential ends it, and so
            // does a changed bootstrap secret). A tenant's deletion takes its admins' sessions.
            """
            CREATE TABLE console_sessions (
                session_hash text PRIMARY KEY,
                credential_id text NOT NULL,
                tenant_id text REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                credential_hash text NOT NULL,
                csrf_token text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                last_seen_at timestamptz NOT NULL DEFAULT now()
            )
            """
        ])
}
