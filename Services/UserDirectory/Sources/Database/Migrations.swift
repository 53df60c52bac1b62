import Logging
import PostgresNIO

/// One numbered, append-only schema change. Migrations are compiled into the binary (no resource
/// bundle to lose in a container); never edit one that has shipped, add the next number instead.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    public let statements: [String]
}

public enum Migrations {
    public static let all: [Migration] = [
        Migration(
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
            ]),
        Migration(
            version: 2, name: "passwords",
            statements: [
                // The project's Firebase-scrypt signer key (base64) is generated by the directory on
                // first start; the salt separator is Firebase's default.
                """
                ALTER TABLE project_config
                    ADD COLUMN hash_signer_key text,
                    ADD COLUMN hash_salt_separator text NOT NULL DEFAULT 'Bw=='
                """,
                // Per user: algorithm, parameters (JSON), salt and hash (base64), as
                // docs/protocol/accounts.md#passwords asks.
                """
                ALTER TABLE users
                    ADD COLUMN password_algorithm text,
                    ADD COLUMN password_params text,
                    ADD COLUMN password_salt text,
                    ADD COLUMN password_hash text,
                    ADD COLUMN password_updated_at bigint
                """,
            ]),
        Migration(
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
            ]),
        Migration(
            version: 4, name: "phone_numbers",
            statements: [
                "ALTER TABLE users ADD COLUMN phone_number text",
                """
                CREATE UNIQUE INDEX users_phone_key ON users (tenant_id, phone_number)
                    WHERE phone_number IS NOT NULL
                """,
            ]),
        Migration(
            version: 5, name: "admin_credentials_and_audit_log",
            statements: [
                // Admin credentials: project-wide (tenant_id NULL) or for one tenant. Only the SHA-256
                // of the secret is kept; the secret is shown once, when it is created.
                """
                CREATE TABLE admin_credentials (
                    credential_id text PRIMARY KEY,
                    tenant_id text REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                    display_name text NOT NULL DEFAULT '',
                    secret_hash text NOT NULL UNIQUE,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    revoked_at timestamptz
                )
                """,
                // Every admin write: who (credential id, never the secret), what, which tenant
                // ('' = project level), when, and the request id.
                """
                CREATE TABLE audit_log (
                    id bigserial PRIMARY KEY,
                    tenant_id text NOT NULL,
                    time timestamptz NOT NULL DEFAULT now(),
                    actor text NOT NULL,
                    action text NOT NULL,
                    target text NOT NULL,
                    request_id text NOT NULL
                )
                """,
                "CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, id)",
            ]),
        Migration(
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
            ]),
        Migration(
            version: 7, name: "cleanup",
            statements: [
                // The sweep lease: one worker sweeps at a time. `token` grows with every acquisition
                // and fences a worker that lost its lease; it doubles as the sweep id.
                """
                CREATE TABLE cleanup_lease (
                    name text PRIMARY KEY,
                    holder text,
                    token bigint NOT NULL DEFAULT 0,
                    expires_at timestamptz
                )
                """,
                "INSERT INTO cleanup_lease (name) VALUES ('anonymous-cleanup')",
                """
                CREATE TABLE cleanup_sweeps (
                    sweep_id bigint PRIMARY KEY,
                    holder text NOT NULL,
                    started_at timestamptz NOT NULL DEFAULT now(),
                    finished_at timestamptz,
                    deleted bigint NOT NULL DEFAULT 0
                )
                """,
                // Per scope: what the sweeps removed (docs/protocol/admin.md#tesseras-own-admin-resources
                // anonymousCleanup).
                """
                CREATE TABLE cleanup_stats (
                    tenant_id text PRIMARY KEY REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                    last_sweep_id bigint,
                    last_sweep_at timestamptz,
                    last_sweep_deleted bigint NOT NULL DEFAULT 0,
                    total_deleted bigint NOT NULL DEFAULT 0
                )
                """,
                // Housekeeping finds what it prunes per scope through these.
                "CREATE INDEX refresh_families_expiry_idx ON refresh_families (tenant_id, expires_at)",
                "CREATE INDEX refresh_families_idle_idx ON refresh_families (tenant_id, last_used_at)",
                """
                CREATE INDEX refresh_families_revoked_idx ON refresh_families (tenant_id, revoked_at)
                    WHERE revoked_at IS NOT NULL
                """,
                "CREATE INDEX oob_codes_expiry_idx ON oob_codes (tenant_id, expires_at)",
                """
                CREATE INDEX mail_outbox_delivered_idx ON mail_outbox (tenant_id, delivered_at)
                    WHERE delivered_at IS NOT NULL
                """,
            ]),
        Migration(
            version: 8, name: "rate_limits",
            statements: [
                // Fixed-window counters shared by every replica; keys are hashed addresses and emails.
                """
                CREATE TABLE rate_counters (
                    tenant_id text NOT NULL,
                    bucket text NOT NULL,
                    key text NOT NULL,
                    window_start timestamptz NOT NULL,
                    count integer NOT NULL,
                    PRIMARY KEY (tenant_id, bucket, key, window_start)
                )
                """,
                "CREATE INDEX rate_counters_window_idx ON rate_counters (tenant_id, window_start)",
                // A scope's overrides of the default limits (JSON); NULL = the defaults.
                "ALTER TABLE tenants ADD COLUMN rate_limits text",
            ]),
        Migration(
            version: 9, name: "rotate_refresh_token_function",
            statements: [
                // A refresh-token rotation (docs/protocol/tokens.md#token-rules) in one round trip instead of
                // eleven: the same checks, in the same order, under the same family row lock. Statements in a
                // VOLATILE function each take a fresh snapshot, so the token is re-read after the lock as
                // before. o_outcome is 'rotated' or 'replayed' with the session's facts, 'reuse' once the
                // family has been revoked (committed), or the Firebase error code to answer.
                """
                CREATE FUNCTION tessera_rotate_refresh_token(
                    p_token_hash text, p_new_hash text, p_sealed text, p_grace double precision,
                    p_idle double precision, p_now_ms bigint)
                RETURNS TABLE (o_outcome text, o_scope text, o_family uuid, o_local_id text, o_provider text,
                    o_auth_time bigint, o_extra_claims text, o_sealed text, o_token_issued_at bigint)
                LANGUAGE plpgsql VOLATILE AS $$
                DECLARE
                    f record;
                    t record;
                    u record;
                    v_disable_auth boolean;
                BEGIN
                    SELECT rt.tenant_id, rt.family_id INTO o_scope, o_family
                    FROM refresh_tokens rt WHERE rt.token_hash = p_token_hash;
                    IF NOT FOUND THEN
                        o_outcome := 'INVALID_REFRESH_TOKEN'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT rf.local_id, rf.sign_in_provider, rf.auth_time,
                        floor(extract(epoch FROM rf.created_at))::bigint AS created,
                        rf.revoked_at IS NOT NULL AS revoked, rf.revoked_reason = 'user_deleted' AS user_deleted,
                        (now() > rf.expires_at OR now() > rf.last_used_at + make_interval(secs => p_idle)) AS expired,
                        rf.extra_claims
                    INTO f FROM refresh_families rf
                    WHERE rf.tenant_id = o_scope AND rf.family_id = o_family FOR UPDATE;
                    IF NOT FOUND THEN
                        o_outcome := 'INVALID_REFRESH_TOKEN'; RETURN NEXT; RETURN;
                    END IF;
                    IF f.user_deleted IS TRUE THEN
                        o_outcome := 'USER_NOT_FOUND'; RETURN NEXT; RETURN;
                    END IF;
                    IF f.revoked OR f.expired THEN
                        o_outcome := 'TOKEN_EXPIRED'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT rt.used_at IS NOT NULL AS used,
                        rt.used_at IS NOT NULL AND now() <= rt.used_at + make_interval(secs => p_grace) AS within_grace,
                        rt.sealed_successor, s.issued_at AS successor_issued_at
                    INTO t FROM refresh_tokens rt LEFT JOIN refresh_tokens s ON s.token_hash = rt.successor_hash
                    WHERE rt.token_hash = p_token_hash;
                    IF NOT FOUND THEN
                        o_outcome := 'INVALID_REFRESH_TOKEN'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT te.disable_auth INTO v_disable_auth FROM tenants te WHERE te.tenant_id = o_scope;
                    IF NOT FOUND THEN
                        o_outcome := 'TENANT_NOT_FOUND'; RETURN NEXT; RETURN;
                    END IF;
                    IF v_disable_auth THEN
                        o_outcome := 'PROJECT_DISABLED'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT us.disabled, us.valid_since INTO u
                    FROM users us WHERE us.tenant_id = o_scope AND us.local_id = f.local_id;
                    IF NOT FOUND THEN
                        o_outcome := 'USER_NOT_FOUND'; RETURN NEXT; RETURN;
                    END IF;
                    IF u.disabled THEN
                        o_outcome := 'USER_DISABLED'; RETURN NEXT; RETURN;
                    END IF;
                    IF f.created < u.valid_since THEN
                        o_outcome := 'TOKEN_EXPIRED'; RETURN NEXT; RETURN;
                    END IF;
                    o_local_id := f.local_id;
                    o_provider := f.sign_in_provider;
                    o_auth_time := f.auth_time;
                    o_extra_claims := f.extra_claims;
                    IF t.used THEN
                        IF t.within_grace AND t.sealed_successor IS NOT NULL
                            AND t.successor_issued_at IS NOT NULL THEN
                            o_outcome := 'replayed';
                            o_sealed := t.sealed_successor;
                            o_token_issued_at := t.successor_issued_at;
                            RETURN NEXT; RETURN;
                        END IF;
                        UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'reuse'
                        WHERE tenant_id = o_scope AND family_id = o_family;
                        o_outcome := 'reuse'; RETURN NEXT; RETURN;
                    END IF;
                    UPDATE refresh_tokens SET used_at = now(), successor_hash = p_new_hash,
                        sealed_successor = p_sealed
                    WHERE token_hash = p_token_hash;
                    INSERT INTO refresh_tokens (token_hash, tenant_id, family_id, issued_at)
                    VALUES (p_new_hash, o_scope, o_family, p_now_ms / 1000);
                    UPDATE refresh_families SET last_used_at = now()
                    WHERE tenant_id = o_scope AND family_id = o_family;
                    UPDATE users SET last_refresh_at = p_now_ms WHERE tenant_id = o_scope AND local_id = f.local_id;
                    o_outcome := 'rotated';
                    o_token_issued_at := p_now_ms / 1000;
                    RETURN NEXT;
                END
                $$
                """
            ]),
        Migration(
            version: 10, name: "refresh_families_hot_revocation",
            statements: [
                // Revoking a session (a deleted user's, in bulk by the cleanup) only sets revoked_at and
                // revoked_reason. Without an index on revoked_at and with room on every page for a
                // second version of each row, that is a HOT update: no new index entries. It was 70%
                // of the cleanup's batch statement (a new row version with five index entries per
                // session). Housekeeping finds revoked sessions by scanning a scope's sessions.
                // fillfactor applies to pages written from now on.
                "DROP INDEX refresh_families_revoked_idx",
                "ALTER TABLE refresh_families SET (fillfactor = 50)",
            ]),
        Migration(
            version: 11, name: "rotate_refresh_token_returns_user",
            statements: [
                // Migration 9's rotation, which also returns the user's row (o_user) as the function
                // read or wrote it, so a refresh needs no second statement for the user. Same checks,
                // same order, same lock; the other result columns are unchanged, so a statement that
                // names them works with either version.
                "DROP FUNCTION tessera_rotate_refresh_token(text, text, text, double precision, double precision, bigint)",
                """
                CREATE FUNCTION tessera_rotate_refresh_token(
                    p_token_hash text, p_new_hash text, p_sealed text, p_grace double precision,
                    p_idle double precision, p_now_ms bigint)
                RETURNS TABLE (o_outcome text, o_scope text, o_family uuid, o_local_id text, o_provider text,
                    o_auth_time bigint, o_extra_claims text, o_sealed text, o_token_issued_at bigint, o_user users)
                LANGUAGE plpgsql VOLATILE AS $$
                DECLARE
                    f record;
                    t record;
                    v_disable_auth boolean;
                BEGIN
                    SELECT rt.tenant_id, rt.family_id INTO o_scope, o_family
                    FROM refresh_tokens rt WHERE rt.token_hash = p_token_hash;
                    IF NOT FOUND THEN
                        o_outcome := 'INVALID_REFRESH_TOKEN'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT rf.local_id, rf.sign_in_provider, rf.auth_time,
                        floor(extract(epoch FROM rf.created_at))::bigint AS created,
                        rf.revoked_at IS NOT NULL AS revoked, rf.revoked_reason = 'user_deleted' AS user_deleted,
                        (now() > rf.expires_at OR now() > rf.last_used_at + make_interval(secs => p_idle)) AS expired,
                        rf.extra_claims
                    INTO f FROM refresh_families rf
                    WHERE rf.tenant_id = o_scope AND rf.family_id = o_family FOR UPDATE;
                    IF NOT FOUND THEN
                        o_outcome := 'INVALID_REFRESH_TOKEN'; RETURN NEXT; RETURN;
                    END IF;
                    IF f.user_deleted IS TRUE THEN
                        o_outcome := 'USER_NOT_FOUND'; RETURN NEXT; RETURN;
                    END IF;
                    IF f.revoked OR f.expired THEN
                        o_outcome := 'TOKEN_EXPIRED'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT rt.used_at IS NOT NULL AS used,
                        rt.used_at IS NOT NULL AND now() <= rt.used_at + make_interval(secs => p_grace) AS within_grace,
                        rt.sealed_successor, s.issued_at AS successor_issued_at
                    INTO t FROM refresh_tokens rt LEFT JOIN refresh_tokens s ON s.token_hash = rt.successor_hash
                    WHERE rt.token_hash = p_token_hash;
                    IF NOT FOUND THEN
                        o_outcome := 'INVALID_REFRESH_TOKEN'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT te.disable_auth INTO v_disable_auth FROM tenants te WHERE te.tenant_id = o_scope;
                    IF NOT FOUND THEN
                        o_outcome := 'TENANT_NOT_FOUND'; RETURN NEXT; RETURN;
                    END IF;
                    IF v_disable_auth THEN
                        o_outcome := 'PROJECT_DISABLED'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT us.* INTO o_user FROM users us WHERE us.tenant_id = o_scope AND us.local_id = f.local_id;
                    IF NOT FOUND THEN
                        o_user := NULL; o_outcome := 'USER_NOT_FOUND'; RETURN NEXT; RETURN;
                    END IF;
                    IF o_user.disabled THEN
                        o_user := NULL; o_outcome := 'USER_DISABLED'; RETURN NEXT; RETURN;
                    END IF;
                    IF f.created < o_user.valid_since THEN
                        o_user := NULL; o_outcome := 'TOKEN_EXPIRED'; RETURN NEXT; RETURN;
                    END IF;
                    o_local_id := f.local_id;
                    o_provider := f.sign_in_provider;
                    o_auth_time := f.auth_time;
                    o_extra_claims := f.extra_claims;
                    IF t.used THEN
                        IF t.within_grace AND t.sealed_successor IS NOT NULL
                            AND t.successor_issued_at IS NOT NULL THEN
                            o_outcome := 'replayed';
                            o_sealed := t.sealed_successor;
                            o_token_issued_at := t.successor_issued_at;
                            RETURN NEXT; RETURN;
                        END IF;
                        UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'reuse'
                        WHERE tenant_id = o_scope AND family_id = o_family;
                        o_user := NULL; o_outcome := 'reuse'; RETURN NEXT; RETURN;
                    END IF;
                    UPDATE refresh_tokens SET used_at = now(), successor_hash = p_new_hash,
                        sealed_successor = p_sealed
                    WHERE token_hash = p_token_hash;
                    INSERT INTO refresh_tokens (token_hash, tenant_id, family_id, issued_at)
                    VALUES (p_new_hash, o_scope, o_family, p_now_ms / 1000);
                    UPDATE refresh_families SET last_used_at = now()
                    WHERE tenant_id = o_scope AND family_id = o_family;
                    UPDATE users SET last_refresh_at = p_now_ms WHERE tenant_id = o_scope AND local_id = f.local_id
                    RETURNING * INTO o_user;
                    o_outcome := 'rotated';
                    o_token_issued_at := p_now_ms / 1000;
                    RETURN NEXT;
                END
                $$
                """,
            ]),
        Migration(
            version: 12, name: "tenant_counters_and_audit_go_with_the_tenant",
            statements: [
                // A deleted tenant's rate counters and audit entries went nowhere: housekeeping only
                // walks live tenants, and a later tenant given the same id would have read the old
                // entries. They now go with the tenant, like every other row of it. A deletion itself
                // is the project's entry: the earlier ones, written under the deleted tenant's id,
                // move to the project's log first (their target names the tenant); the rest of a
                // deleted tenant's rows go.
                """
                UPDATE audit_log a SET tenant_id = ''
                WHERE a.action = 'DELETE /v2/projects/{project}/tenants/{tenant}'
                    AND NOT EXISTS (SELECT 1 FROM tenants t WHERE t.tenant_id = a.tenant_id)
                """,
                "DELETE FROM rate_counters r WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.tenant_id = r.tenant_id)",
                "DELETE FROM audit_log a WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.tenant_id = a.tenant_id)",
                // NOT VALID: no scan of the tables under the lock (the rows were just checked above);
                // new rows and deletions are held to the keys all the same.
                """
                ALTER TABLE rate_counters ADD FOREIGN KEY (tenant_id) REFERENCES tenants (tenant_id)
                    ON DELETE CASCADE NOT VALID
                """,
                """
                ALTER TABLE audit_log ADD FOREIGN KEY (tenant_id) REFERENCES tenants (tenant_id)
                    ON DELETE CASCADE NOT VALID
                """,
            ]),
        Migration(
            version: 13, name: "email_link_sign_in",
            statements: [
                // A user who signed in with an email link (docs/protocol/accounts.md#accounts-and-providers):
                // with an email, the `password` provider entry, with or without a password
                // (docs/protocol/accounts.md#the-user-record). A constant default: no rewrite.
                "ALTER TABLE users ADD COLUMN email_link_signin boolean NOT NULL DEFAULT false",
                // An EMAIL_SIGNIN code may be sent to an address no account has yet (it signs up).
                "ALTER TABLE oob_codes ALTER COLUMN local_id DROP NOT NULL",
            ]),
        Migration(
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
            ]),
        Migration(
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
            ]),
        Migration(
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
            ]),
        Migration(
            version: 17, name: "revocation_ends_sessions",
            statements: [
                // Migration 11's rotation, with one change (issue #35): a disable ends the user's
                // sessions for good (revoked_reason 'user_disabled'), and a refresh of such a session
                // answers USER_DISABLED while the user is disabled, TOKEN_EXPIRED once enabled again.
                // Before, a disable only moved valid_since, whose whole seconds let a session started
                // in the second of the disable come back at re-enable. And the rotation takes the
                // user's row lock before the session's, the order every revocation takes them in
                // (the user, then its sessions): a refresh racing an admin's revocation deadlocked.
                // Same signature and result.
                """
                CREATE OR REPLACE FUNCTION tessera_rotate_refresh_token(
                    p_token_hash text, p_new_hash text, p_sealed text, p_grace double precision,
                    p_idle double precision, p_now_ms bigint)
                RETURNS TABLE (o_outcome text, o_scope text, o_family uuid, o_local_id text, o_provider text,
                    o_auth_time bigint, o_extra_claims text, o_sealed text, o_token_issued_at bigint, o_user users)
                LANGUAGE plpgsql VOLATILE AS $$
                DECLARE
                    f record;
                    t record;
                    v_disable_auth boolean;
                BEGIN
                    SELECT rt.tenant_id, rt.family_id INTO o_scope, o_family
                    FROM refresh_tokens rt WHERE rt.token_hash = p_token_hash;
                    IF NOT FOUND THEN
                        o_outcome := 'INVALID_REFRESH_TOKEN'; RETURN NEXT; RETURN;
                    END IF;
                    PERFORM 1 FROM users us
                    WHERE us.tenant_id = o_scope AND us.local_id = (
                        SELECT rf.local_id FROM refresh_families rf
                        WHERE rf.tenant_id = o_scope AND rf.family_id = o_family)
                    FOR NO KEY UPDATE;
                    SELECT rf.local_id, rf.sign_in_provider, rf.auth_time,
                        floor(extract(epoch FROM rf.created_at))::bigint AS created,
                        rf.revoked_at IS NOT NULL AS revoked, rf.revoked_reason = 'user_deleted' AS user_deleted,
                        rf.revoked_reason IS NOT DISTINCT FROM 'user_disabled' AS revoked_by_disable,
                        (now() > rf.expires_at OR now() > rf.last_used_at + make_interval(secs => p_idle)) AS expired,
                        rf.extra_claims
                    INTO f FROM refresh_families rf
                    WHERE rf.tenant_id = o_scope AND rf.family_id = o_family FOR UPDATE;
                    IF NOT FOUND THEN
                        o_outcome := 'INVALID_REFRESH_TOKEN'; RETURN NEXT; RETURN;
                    END IF;
                    IF f.user_deleted IS TRUE THEN
                        o_outcome := 'USER_NOT_FOUND'; RETURN NEXT; RETURN;
                    END IF;
                    IF (f.revoked AND NOT f.revoked_by_disable) OR f.expired THEN
                        o_outcome := 'TOKEN_EXPIRED'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT rt.used_at IS NOT NULL AS used,
                        rt.used_at IS NOT NULL AND now() <= rt.used_at + make_interval(secs => p_grace) AS within_grace,
                        rt.sealed_successor, s.issued_at AS successor_issued_at
                    INTO t FROM refresh_tokens rt LEFT JOIN refresh_tokens s ON s.token_hash = rt.successor_hash
                    WHERE rt.token_hash = p_token_hash;
                    IF NOT FOUND THEN
                        o_outcome := 'INVALID_REFRESH_TOKEN'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT te.disable_auth INTO v_disable_auth FROM tenants te WHERE te.tenant_id = o_scope;
                    IF NOT FOUND THEN
                        o_outcome := 'TENANT_NOT_FOUND'; RETURN NEXT; RETURN;
                    END IF;
                    IF v_disable_auth THEN
                        o_outcome := 'PROJECT_DISABLED'; RETURN NEXT; RETURN;
                    END IF;
                    SELECT us.* INTO o_user FROM users us WHERE us.tenant_id = o_scope AND us.local_id = f.local_id;
                    IF NOT FOUND THEN
                        o_user := NULL; o_outcome := 'USER_NOT_FOUND'; RETURN NEXT; RETURN;
                    END IF;
                    IF o_user.disabled THEN
                        o_user := NULL; o_outcome := 'USER_DISABLED'; RETURN NEXT; RETURN;
                    END IF;
                    IF f.revoked OR f.created < o_user.valid_since THEN
                        o_user := NULL; o_outcome := 'TOKEN_EXPIRED'; RETURN NEXT; RETURN;
                    END IF;
                    o_local_id := f.local_id;
                    o_provider := f.sign_in_provider;
                    o_auth_time := f.auth_time;
                    o_extra_claims := f.extra_claims;
                    IF t.used THEN
                        IF t.within_grace AND t.sealed_successor IS NOT NULL
                            AND t.successor_issued_at IS NOT NULL THEN
                            o_outcome := 'replayed';
                            o_sealed := t.sealed_successor;
                            o_token_issued_at := t.successor_issued_at;
                            RETURN NEXT; RETURN;
                        END IF;
                        UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'reuse'
                        WHERE tenant_id = o_scope AND family_id = o_family;
                        o_user := NULL; o_outcome := 'reuse'; RETURN NEXT; RETURN;
                    END IF;
                    UPDATE refresh_tokens SET used_at = now(), successor_hash = p_new_hash,
                        sealed_successor = p_sealed
                    WHERE token_hash = p_token_hash;
                    INSERT INTO refresh_tokens (token_hash, tenant_id, family_id, issued_at)
                    VALUES (p_new_hash, o_scope, o_family, p_now_ms / 1000);
                    UPDATE refresh_families SET last_used_at = now()
                    WHERE tenant_id = o_scope AND family_id = o_family;
                    UPDATE users SET last_refresh_at = p_now_ms WHERE tenant_id = o_scope AND local_id = f.local_id
                    RETURNING * INTO o_user;
                    o_outcome := 'rotated';
                    o_token_issued_at := p_now_ms / 1000;
                    RETURN NEXT;
                END
                $$
                """
            ]),
        Migration(
            version: 18, name: "initial_email",
            statements: [
                // The first address a user had before changing it (docs/protocol/accounts.md#the-user-record
                // `initialEmail`, issue 36): set with the first email-change notice (docs/design-notes.md,
                // "Out-of-band codes and mail"), never changed afterwards. NULL: never changed.
                "ALTER TABLE users ADD COLUMN initial_email text"
            ]),
        Migration(
            version: 19, name: "provider_link_emails",
            statements: [
                // createAuthUri finds an account by its linked providers' emails too (issue 36): one
                // probe, not a scan of the tenant's links, on a path anyone can call.
                "CREATE INDEX provider_links_email_idx ON provider_links (tenant_id, email) WHERE email IS NOT NULL"
            ]),
        Migration(
            version: 20, name: "scope_mfa_config",
            statements: [
                // A scope's multi-factor settings as given (Tenant `mfaConfig`, Config `mfa`), JSON;
                // NULL = the defaults (DISABLED, no providers). docs/design-notes.md, "Tenants and settings".
                "ALTER TABLE tenants ADD COLUMN mfa_config text"
            ]),
        Migration(
            version: 21, name: "linked_accounts_are_permanent",
            statements: [
                // An admin's linkProviderUserInfo left an anonymous account marked anonymous, and the
                // cleanup deleted it when due; linking now ends anonymity (`AccountRows.link`). This
                // mends the accounts linked that way before.
                """
                UPDATE users u SET is_anonymous = false, anonymous_due_at = NULL
                WHERE u.is_anonymous AND EXISTS (
                    SELECT 1 FROM provider_links l WHERE l.tenant_id = u.tenant_id AND l.local_id = u.local_id)
                """
            ]),
    ]

    public static var latestVersion: Int { all.last?.version ?? 0 }
}

public enum MigrationError: Error, CustomStringConvertible {
    case unknownSchema(applied: [Int], known: Int)
    case pending([Int])

    public var description: String {
        switch self {
        case .unknownSchema(let applied, let known):
            "the database has migrations \(applied) but this binary knows only up to \(known): refusing to run against an unknown schema"
        case .pending(let versions):
            "migrations \(versions) are pending: run `user-directory migrate` (or set TESSERA_AUTO_MIGRATE=true)"
        }
    }
}

/// Applies migrations in one transaction under an advisory lock, so that several replicas or a
/// migration job racing a service never apply one twice.
public struct MigrationRunner: Sendable {
    static let advisoryLockKey: Int64 = 0x7465_7373_6572_61  // "tessera"
    let client: Database
    let migrations: [Migration]

    public init(client: Database, migrations: [Migration] = Migrations.all) {
        self.client = client
        self.migrations = migrations
    }

    /// Applies every pending migration; returns the versions applied.
    @discardableResult
    public func migrate(logger: Logger) async throws -> [Int] {
        let migrations = self.migrations
        return try await client.transaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
            let applied = try await Self.appliedVersions(connection, logger: logger)
            let known = Set(migrations.map(\.version))
            let unknown = applied.filter { !known.contains($0) }
            guard unknown.isEmpty else {
                throw MigrationError.unknownSchema(applied: applied, known: migrations.last?.version ?? 0)
            }
            var done: [Int] = []
            for migration in migrations where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
                logger.info("applied migration", metadata: ["migration.version": "\(migration.version)"])
                done.append(migration.version)
            }
            return done
        }
    }

    /// Checks that the schema is exactly what this binary knows; returns the current version.
    public func check(logger: Logger) async throws -> Int {
        let exists =
            try await client.query(
                "SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger
            ).decode(Bool.self).first { _ in true } ?? false
        let known = Set(migrations.map(\.version))
        var applied: [Int] = []
        if exists {
            applied = try await client.withConnection { try await Self.appliedVersions($0, logger: logger) }
        }
        let unknown = applied.filter { !known.contains($0) }
        guard unknown.isEmpty else {
            throw MigrationError.unknownSchema(applied: applied, known: migrations.last?.version ?? 0)
        }
        let pending = migrations.map(\.version).filter { !applied.contains($0) }
        guard pending.isEmpty else { throw MigrationError.pending(pending) }
        return applied.max() ?? 0
    }

    static func appliedVersions(_ connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        var versions: [Int] = []
        for try await version in try await connection.query(
            "SELECT version FROM schema_migrations ORDER BY version", logger: logger
        ).decode(Int.self) {
            versions.append(version)
        }
        return versions
    }
}
