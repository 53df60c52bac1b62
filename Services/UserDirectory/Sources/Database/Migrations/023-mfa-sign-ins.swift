extension Migration {
    static let mfaSignIns = Migration(
        version: 23, name: "mfa_sign_ins",
        statements: [
            // A first-factor sign-in of a user with second factors (issue 39) starts no session: it leaves
            // a pending sign-in, found by the SHA-256 of the `mfaPendingCredential` the client was given,
            // that `mfaSignIn:finalize` consumes with a second factor. Wrong codes are counted on it; it
            // expires, and goes with its user.
            """
            CREATE TABLE mfa_pending_sign_ins (
                tenant_id text NOT NULL,
                credential_hash text NOT NULL,
                local_id text NOT NULL,
                sign_in_provider text NOT NULL,
                failed_attempts integer NOT NULL DEFAULT 0,
                created_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, credential_hash),
                FOREIGN KEY (tenant_id, local_id) REFERENCES users (tenant_id, local_id) ON DELETE CASCADE
            )
            """,
            "CREATE INDEX mfa_pending_sign_ins_expiry_idx ON mfa_pending_sign_ins (expires_at)",
            // The second factor a session was signed in with, carried into every ID token of it
            // (`firebase.sign_in_second_factor`, `second_factor_identifier`); NULL for one factor.
            """
            ALTER TABLE refresh_families ADD COLUMN second_factor text,
                ADD COLUMN second_factor_id text
            """,
        ])
}
