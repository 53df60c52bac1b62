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
            SELECT sign_in_provider, created_at, last_used_at, expires_at, revoked_at, revoked_reason, second_factor
            FROM refresh_families WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
            ORDER BY created_at DESC LIMIT \(limit)
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
