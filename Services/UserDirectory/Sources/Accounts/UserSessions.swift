import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// One session of a user (a refresh-token family), as admins see it.
struct UserSession: Sendable {
    var signInProvider: String
    var startedAt: Date
    var lastRefreshAt: Date
    var expiresAt: Date
    var revokedAt: Date?
    var revokedReason: String?
    /// The second factor the session was signed in with (`totp`, `phone`), if any.
    var secondFactor: String? = nil
}

extension AdminUsers {
    /// The user's sessions, newest first (at most `limit`).
    func sessions(scope: Scope, localId: String, limit: Int = 50, logger: Logger) async throws -> [UserSession] {
        let rows = try await client.query(
            """
            SELECT f.sign_in_provider, f.created_at, f.last_used_at, f.expires_at, f.revoked_at, f.revoked_reason,
                s.second_factor
            FROM refresh_families f
            LEFT JOIN session_second_factors s ON s.tenant_id = f.tenant_id AND s.family_id = f.family_id
            WHERE f.tenant_id = \(scope: scope) AND f.local_id = \(localId)
            ORDER BY f.created_at DESC LIMIT \(limit)
            """, logger: logger)
        var sessions: [UserSession] = []
        for try await (provider, started, last, expires, revoked, reason, factor) in rows.decode(
            (String, Date, Date, Date, Date?, String?, String?).self)
        {
            sessions.append(
                UserSession(
                    signInProvider: provider, startedAt: started, lastRefreshAt: last, expiresAt: expires,
                    revokedAt: revoked, revokedReason: reason, secondFactor: factor))
        }
        return sessions
    }
}
