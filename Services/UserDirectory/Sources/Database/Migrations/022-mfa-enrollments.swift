extension Migration {
    static let mfaEnrollments = Migration(
        version: 22, name: "mfa_enrollments",
        statements: [
            // A user's second factors (issue 39): a TOTP authenticator or a phone number. A TOTP seed is
            // stored sealed under the operator's keys (`SecretSealer`), never in the clear; the last time
            // step a code was accepted for makes each code single-use. Deleted with their user.
            """
            CREATE TABLE mfa_enrollments (
                tenant_id text NOT NULL,
                local_id text NOT NULL,
                enrollment_id text NOT NULL,
                factor text NOT NULL CHECK (factor IN ('totp', 'phone')),
                display_name text,
                phone_number text,
                totp_secret text,
                totp_last_step bigint,
                enrolled_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (tenant_id, enrollment_id),
                FOREIGN KEY (tenant_id, local_id) REFERENCES users (tenant_id, local_id) ON DELETE CASCADE,
                CHECK ((factor = 'totp') = (totp_secret IS NOT NULL)),
                CHECK ((factor = 'phone') = (phone_number IS NOT NULL))
            )
            """,
            "CREATE INDEX mfa_enrollments_user_idx ON mfa_enrollments (tenant_id, local_id)",
        ])
}
