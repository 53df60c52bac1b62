extension Migration {
    static let phoneSignIn = Migration(
        version: 25, name: "phone_sign_in",
        statements: [
            // A scope's phone settings (issue 39): phone sign-in on or off, test numbers, SMS regions.
            // JSON, NULL for the defaults (`PhoneConfig`).
            "ALTER TABLE tenants ADD COLUMN phone_config text",
            // A code sent by SMS (or a test number's fixed code), found by the SHA-256 of the `sessionInfo`
            // the client was given. The code is kept only as the SHA-256 of the session info and the code
            // together: without the session info, which is stored nowhere, the hash does not give the code
            // away. Wrong codes are counted; a used code is deleted; an expired one is useless. A second
            // factor's code names its user, and for a sign-in the pending sign-in and the factor.
            """
            CREATE TABLE phone_codes (
                tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                session_hash text NOT NULL,
                phone_number text NOT NULL,
                code_hash text NOT NULL,
                purpose text NOT NULL CHECK (purpose IN ('sign_in', 'mfa_enrollment', 'mfa_sign_in')),
                local_id text,
                pending_hash text,
                enrollment_id text,
                failed_attempts integer NOT NULL DEFAULT 0,
                created_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, session_hash)
            )
            """,
            "CREATE INDEX phone_codes_expiry_idx ON phone_codes (expires_at)",
        ])
}
