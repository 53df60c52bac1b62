import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// A signed-in console session: who (the admin principal the credential stands for) and the token
/// every form of the session must carry (CSRF).
struct ConsoleSession: Sendable {
    var principal: AdminPrincipal
    var csrfToken: String
}

/// The console's sessions in PostgreSQL (issue #25). The cookie carries a 256-bit random value; the
/// table keeps its SHA-256 only. A session ends at sign-out, after `idleTimeout` without a request,
/// `absoluteTimeout` after sign-in, or as soon as the credential it was opened with is revoked.
struct ConsoleSessionStore: Sendable {
    let client: Database
    let credentials: AdminCredentialStore
    let idleTimeout: Duration
    let absoluteTimeout: Duration

    /// Opens a session for `principal`, who presented `secret`; returns the cookie's value.
    func open(_ principal: AdminPrincipal, secret: String, logger: Logger) async throws -> (
        token: String, session: ConsoleSession
    ) {
        let token = "tcs_" + Base64URL.encode(Secrets.randomBytes(32))
        let csrf = Base64URL.encode(Secrets.randomBytes(24))
        // Sessions past their time are removed as new ones open: the table stays the size of the
        // admins signed in.
        try await client.query(
            """
            DELETE FROM console_sessions
            WHERE last_seen_at < now() - make_interval(secs => \(idleTimeout.wholeSeconds))
                OR created_at < now() - make_interval(secs => \(absoluteTimeout.wholeSeconds))
            """, logger: logger)
        try await client.query(
            """
            INSERT INTO console_sessions (session_hash, credential_id, tenant_id, credential_hash, csrf_token)
            VALUES (\(Secrets.tokenHash(token)), \(principal.credentialId), \(owner: principal.owner),
                \(Secrets.tokenHash(secret)), \(csrf))
            """, logger: logger)
        return (token, ConsoleSession(principal: principal, csrfToken: csrf))
    }

    /// The live session a cookie value names, its idle time restarted; nil when there is none.
    func resume(_ token: String, logger: Logger) async throws -> ConsoleSession? {
        guard token.hasPrefix("tcs_"), token.count < 100 else { return nil }
        let rows = try await client.query(
            """
            UPDATE console_sessions s SET last_seen_at = now()
            WHERE s.session_hash = \(Secrets.tokenHash(token))
                AND s.last_seen_at > now() - make_interval(secs => \(idleTimeout.wholeSeconds))
                AND s.created_at > now() - make_interval(secs => \(absoluteTimeout.wholeSeconds))
                AND (s.credential_id = 'bootstrap' OR EXISTS (
                    SELECT 1 FROM admin_credentials c
                    WHERE c.credential_id = s.credential_id AND c.secret_hash = s.credential_hash
                        AND c.revoked_at IS NULL))
            RETURNING s.credential_id, s.tenant_id, s.credential_hash, s.csrf_token
            """, logger: logger)
        for try await (id, tenant, credentialHash, csrf) in rows.decode((String, String?, String, String).self) {
            // A bootstrap session lasts while the bootstrap secret it was opened with is the current one.
            if id == AdminPrincipal.bootstrap.credentialId,
                !Secrets.constantTimeEquals(credentialHash, Secrets.tokenHash(credentials.bootstrapSecret))
            {
                return nil
            }
            return ConsoleSession(
                principal: AdminPrincipal(credentialId: id, owner: Owner(column: tenant)), csrfToken: csrf)
        }
        return nil
    }

    /// Ends the session a cookie value names (sign-out).
    func close(_ token: String, logger: Logger) async throws {
        try await client.query(
            "DELETE FROM console_sessions WHERE session_hash = \(Secrets.tokenHash(token))", logger: logger)
    }
}
