extension Migration {
    static let authorizationFlows = Migration(
        version: 16, name: "authorization_flows",
        statements: [
            // Server-side authorization flows with identity providers (issue #34): started by
            // createAuthUri or the hosted handler, found by the SHA-256 of their `state`, consumed
            // once by signInWithIdp, pruned by housekeeping once expired. `client` is the hosted
            // handler's SDK context (where the answer goes back), as JSON.
            """
            CREATE TABLE auth_flows (
                tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                state_hash text NOT NULL,
                provider_id text NOT NULL,
                session_hashes text[] NOT NULL,
                api_key_hash text NOT NULL,
                continue_uri text NOT NULL,
                redirect_uri text NOT NULL,
                token_url text,
                nonce text,
                code_verifier text,
                request_token text,
                request_token_secret text,
                client text,
                created_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, state_hash)
            )
            """,
            // Apple's code flow (Identity Platform's appleSignInConfig.codeFlowConfig): the client
            // secret is a JWT signed with the team's Sign in with Apple key.
            """
            ALTER TABLE idp_configs
                ADD COLUMN apple_team_id text, ADD COLUMN apple_key_id text, ADD COLUMN apple_private_key text
            """,
            // The project's authorized domains (Firebase's Config.authorizedDomains); NULL: the
            // deployment's default (TESSERA_AUTHORIZED_DOMAINS).
            "ALTER TABLE project_config ADD COLUMN authorized_domains text[]",
        ])
}
