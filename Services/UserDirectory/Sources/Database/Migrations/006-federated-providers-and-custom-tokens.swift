extension Migration {
    static let federatedProvidersAndCustomTokens = Migration(
        version: 6, name: "federated_providers_and_custom_tokens",
        statements: [
            // Identity-provider configurations per scope: the built-in providers
            // (defaultSupportedIdpConfigs) and the scope's own OIDC providers (oauthIdpConfigs).
            // `trusted_email_domains` lists domains whose addresses an OIDC provider verifies
            // (docs/protocol/accounts.md#verified-email-and-automatic-linking).
            """
            CREATE TABLE idp_configs (
                tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                provider_id text NOT NULL,
                enabled boolean NOT NULL DEFAULT false,
                client_id text NOT NULL,
                client_secret text,
                issuer text,
                display_name text,
                response_id_token boolean NOT NULL DEFAULT true,
                response_code boolean NOT NULL DEFAULT false,
                trusted_email_domains text[] NOT NULL DEFAULT '{}',
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (tenant_id, provider_id)
            )
            """,
            // Service accounts that sign custom tokens: project-wide (tenant_id NULL) or one
            // tenant's. Only the public key is kept; a generated private key is shown once.
            """
            CREATE TABLE service_accounts (
                account_id text PRIMARY KEY,
                tenant_id text REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                display_name text NOT NULL DEFAULT '',
                client_email text NOT NULL UNIQUE,
                client_id text NOT NULL,
                private_key_id text NOT NULL UNIQUE,
                public_key_pem text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                revoked_at timestamptz
            )
            """,
            "ALTER TABLE users ADD COLUMN custom_auth boolean NOT NULL DEFAULT false",
            "ALTER TABLE provider_links ADD COLUMN screen_name text",
            // A custom token's `claims` belong to the session: every refresh puts them back.
            "ALTER TABLE refresh_families ADD COLUMN extra_claims text",
        ])
}
