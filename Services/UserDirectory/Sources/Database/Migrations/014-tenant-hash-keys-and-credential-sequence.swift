extension Migration {
    static let tenantHashKeysAndCredentialSequence = Migration(
        version: 14, name: "tenant_hash_keys_and_credential_sequence",
        statements: [
            // Each tenant's own Firebase-scrypt key (issue #23), written on its first use: a
            // tenant's admins can derive the key from a hash they export, so it must protect
            // that tenant's hashes only.
            "ALTER TABLE tenants ADD COLUMN hash_signer_key text, ADD COLUMN hash_salt_separator text",
            // Hashes tenants already hold were made with the project's key: marked, so they
            // verify with it, are not exported under the tenant's hash config, and are re-made
            // with the tenant's key at the user's next sign-in.
            """
            UPDATE users SET password_params = (password_params::jsonb || '{"projectKey": true}')::text
            WHERE tenant_id <> '' AND password_algorithm = 'SCRYPT'
                AND NOT (password_params::jsonb ? 'signerKey')
            """,
            // Emails are compared in NFC (issue #23): stored ones are brought to it, except where
            // another account already has the NFC form (the operator merges those by hand).
            // normalize() needs a UTF-8 database; others keep what they have.
            """
            DO $$ BEGIN
                IF current_setting('server_encoding') = 'UTF8' THEN
                    UPDATE users u SET email = n.nfc
                    FROM (
                        SELECT DISTINCT ON (tenant_id, normalize(email, NFC)) tenant_id, local_id,
                            normalize(email, NFC) AS nfc
                        FROM users WHERE email IS NOT NULL AND email <> normalize(email, NFC)
                        ORDER BY tenant_id, normalize(email, NFC), local_id
                    ) n
                    WHERE u.tenant_id = n.tenant_id AND u.local_id = n.local_id
                        AND NOT EXISTS (SELECT 1 FROM users d WHERE d.tenant_id = n.tenant_id AND d.email = n.nfc);
                END IF;
            END $$
            """,
            // Out-of-band codes are bound to the credentials they were sent for by a sequence
            // (issue #23), not by comparing clocks: a change of the password, the email, the
            // disabled flag or validSince moves the user's sequence, and a code sent before
            // no longer matches it. A re-hash at sign-in keeps password_updated_at, so it
            // leaves the sequence alone. Constant defaults: no table rewrite.
            "ALTER TABLE users ADD COLUMN credential_seq bigint NOT NULL DEFAULT 0",
            "ALTER TABLE oob_codes ADD COLUMN credential_seq bigint NOT NULL DEFAULT 0",
            """
            CREATE FUNCTION users_next_credential_seq() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                NEW.credential_seq := OLD.credential_seq + 1;
                RETURN NEW;
            END $$
            """,
            """
            CREATE TRIGGER users_credential_seq BEFORE UPDATE ON users FOR EACH ROW
            WHEN (NEW.password_updated_at IS DISTINCT FROM OLD.password_updated_at
                OR NEW.email IS DISTINCT FROM OLD.email
                OR NEW.disabled IS DISTINCT FROM OLD.disabled
                OR NEW.valid_since IS DISTINCT FROM OLD.valid_since)
            EXECUTE FUNCTION users_next_credential_seq()
            """,
        ])
}
