extension Migration {
    static let oobCodesAndMailOutbox = Migration(
        version: 3, name: "oob_codes_and_mail_outbox",
        statements: [
            // Out-of-band codes by SHA-256 (the code itself exists only in the mail).
            """
            CREATE TABLE oob_codes (
                code_hash text PRIMARY KEY,
                tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                local_id text NOT NULL,
                request_type text NOT NULL,
                email text NOT NULL,
                new_email text,
                created_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz NOT NULL,
                used_at timestamptz
            )
            """,
            "CREATE INDEX oob_codes_user_idx ON oob_codes (tenant_id, local_id)",
            // The durable outbox (docs/protocol/accounts.md#email-delivery). A message's body is cleared
            // once it is delivered.
            """
            CREATE TABLE mail_outbox (
                id bigserial PRIMARY KEY,
                tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                recipient text NOT NULL,
                subject text NOT NULL,
                body text,
                created_at timestamptz NOT NULL DEFAULT now(),
                attempts integer NOT NULL DEFAULT 0,
                next_attempt_at timestamptz NOT NULL DEFAULT now(),
                claimed_until timestamptz,
                last_error text,
                delivered_at timestamptz,
                failed_at timestamptz
            )
            """,
            """
            CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at)
                WHERE delivered_at IS NULL AND failed_at IS NULL
            """,
            // Per-scope mail templates; a scope without a row uses the built-in default.
            """
            CREATE TABLE mail_templates (
                tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                request_type text NOT NULL,
                subject text NOT NULL,
                body text NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (tenant_id, request_type)
            )
            """,
        ])
}
