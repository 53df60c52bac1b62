extension Migration {
    static let revocationEndsSessions = Migration(
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
        ])
}
