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
}

extension AdminUsers {
    /// The user's sessions, newest first (at most `limit`).
    func sessions(scope: Scope, localId: String, limit: Int = 50, logger: Logger) async throws -> [UserSession] {
        let rows = try await client.query(
            """
            SELECT sign_in_provider, created_at, last_used_at, expires_at, revoked_at, revoked_reason
            FROM refresh_families WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
            ORDER BY created_at DESC LIMIT \(limit)
            """, logger: logger)
        var sessions: [UserSession] = []
        for try await (provider, started, last, expires, revoked, reason) in rows.decode(
            (String, Date, Date, Date, Date?, String?).self)
        {
            sessions.append(
                UserSession(
                    signInProvider: provider, startedAt: started, lastRefreshAt: last, expiresAt: expires,
                    revokedAt: revoked, revokedReason: reason))
        }
        return sessions
    }
}
