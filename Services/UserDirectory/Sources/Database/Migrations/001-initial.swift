extension Migration {
    static let initial = Migration(
        version: 1, name: "initial",
        statements: [
            """
            CREATE TABLE project_config (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                allow_duplicate_emails boolean NOT NULL DEFAULT false,
                enable_improved_email_privacy boolean NOT NULL DEFAULT true,
                updated_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            "INSERT INTO project_config (singleton) VALUES (true)",
            // One row per tenant; the row with tenant_id '' is the project's default scope, so that
            // every tenant-owned row can carry a non-null tenant id as the leading key column.
            """
            CREATE TABLE tenants (
                tenant_id text PRIMARY KEY,
                display_name text NOT NULL DEFAULT '',
                allow_password_signup boolean NOT NULL DEFAULT false,
                enable_email_link_signin boolean NOT NULL DEFAULT false,
                enable_anonymous_user boolean NOT NULL DEFAULT false,
                disable_auth boolean NOT NULL DEFAULT false,
                disabled_user_signup boolean NOT NULL DEFAULT false,
                disabled_user_deletion boolean NOT NULL DEFAULT false,
                autodelete_anonymous_users boolean NOT NULL DEFAULT false,
                autodelete_enabled_at timestamptz,
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            "INSERT INTO tenants (tenant_id, allow_password_signup) VALUES ('', true)",
            """
            CREATE TABLE users (
                tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                local_id text NOT NULL,
                email text,
                email_verified boolean NOT NULL DEFAULT false,
                display_name text,
                photo_url text,
                disabled boolean NOT NULL DEFAULT false,
                custom_attributes text,
                valid_since bigint NOT NULL,
                created_at bigint NOT NULL,
                last_login_at bigint,
                last_refresh_at bigint,
                is_anonymous boolean NOT NULL DEFAULT false,
                anonymous_due_at timestamptz,
                PRIMARY KEY (tenant_id, local_id)
            )
            """,
            "CREATE UNIQUE INDEX users_email_key ON users (tenant_id, email) WHERE email IS NOT NULL",
            """
            CREATE INDEX users_anonymous_due_idx ON users (tenant_id, anonymous_due_at)
                WHERE anonymous_due_at IS NOT NULL
            """,
            """
            CREATE TABLE provider_links (
                tenant_id text NOT NULL,
                provider_id text NOT NULL,
                raw_id text NOT NULL,
                local_id text NOT NULL,
                federated_id text,
                email text,
                display_name text,
                photo_url text,
                PRIMARY KEY (tenant_id, provider_id, raw_id),
                FOREIGN KEY (tenant_id, local_id) REFERENCES users (tenant_id, local_id) ON DELETE CASCADE
            )
            """,
            "CREATE INDEX provider_links_user_idx ON provider_links (tenant_id, local_id)",
            // A refresh-token family is one sign-in session. It outlives its user on purpose: a deleted
            // user's sessions are revoked with reason 'user_deleted' so that a refresh answers
            // USER_NOT_FOUND (docs/protocol/tokens.md#the-secure-token-api) and a later user with the
            // same id inherits nothing. The cleanup worker prunes revoked and expired families. Deleting
            // a tenant removes them.
            """
            CREATE TABLE refresh_families (
                tenant_id text NOT NULL,
                family_id uuid NOT NULL,
                local_id text NOT NULL,
                sign_in_provider text NOT NULL,
                auth_time bigint NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                last_used_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz NOT NULL,
                revoked_at timestamptz,
                revoked_reason text,
                PRIMARY KEY (tenant_id, family_id)
            )
            """,
            "CREATE INDEX refresh_families_user_idx ON refresh_families (tenant_id, local_id)",
            """
            ALTER TABLE refresh_families ADD FOREIGN KEY (tenant_id) REFERENCES tenants (tenant_id)
                ON DELETE CASCADE
            """,
            // Every refresh token ever issued in a live family, by the SHA-256 of the token: a
            // random 256-bit value is a global key. Old tokens are kept so reuse is recognised.
            """
            CREATE TABLE refresh_tokens (
                token_hash text PRIMARY KEY,
                tenant_id text NOT NULL,
                family_id uuid NOT NULL,
                issued_at bigint NOT NULL,
                used_at timestamptz,
                successor_hash text,
                sealed_successor text,
                FOREIGN KEY (tenant_id, family_id) REFERENCES refresh_families (tenant_id, family_id)
                    ON DELETE CASCADE
            )
            """,
            "CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (tenant_id, family_id)",
        ])
}
