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
            // (`firebase.sign_in_second_factor`, `second_factor_identifier`); no row for one factor. A table
            // of its own and not columns of `refresh_families`: two more columns there made PostgreSQL
            // plan the foreign-key check of every new refresh token, on a table not analyzed yet, with an
            // index on `tenant_id` alone, which then read all of a tenant's sessions for each sign-up
            // until the next autoanalyze (docs/design-notes.md, "Second factors").
            """
            CREATE TABLE session_second_factors (
                tenant_id text NOT NULL,
                family_id uuid NOT NULL,
                second_factor text NOT NULL CHECK (second_factor IN ('totp', 'phone')),
                second_factor_id text NOT NULL,
                PRIMARY KEY (tenant_id, family_id),
                FOREIGN KEY (tenant_id, family_id) REFERENCES refresh_families (tenant_id, family_id) ON DELETE CASCADE
            )
            """,
            """
            CREATE INDEX session_second_factors_factor_idx ON session_second_factors (tenant_id, second_factor_id)
            """,
        ])
}
