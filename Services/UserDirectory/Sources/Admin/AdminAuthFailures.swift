import Hummingbird
import Logging
import PostgresNIO
import TesseraShared

/// The limit on failed admin authentication (docs/architecture.md, "The admin authentication
/// limit"): each unknown credential counts against the caller's address in the project's rate
/// counters, shared by every replica; past the limit an unknown credential from that address gets
/// `TOO_MANY_ATTEMPTS_TRY_LATER` with `Retry-After` until the hour's window ends. A known credential
/// is never refused by it, so a flood of wrong guesses cannot lock the admins out.
struct AdminAuthFailures: Sendable {
    static let bucket = "admin_auth_failure"
    let client: Database
    let clientAddress: ClientAddress
    let internalSecret: String
    let limit: Int

    /// The caller's address: on a call the token service relays (the Admin SDKs' privileged calls on
    /// client paths), the end user's as it resolved it, believed only beside the internal secret;
    /// otherwise the peer, or what trusted proxies say it is.
    func address(_ request: Request, _ context: DirectoryContext) -> String? {
        if let relayed = request.headers[.relayedClientAddress], CIDR.bytes(relayed) != nil,
            let presented = request.headers[.internalSecret],
            Secrets.constantTimeEquals(presented, internalSecret)
        {
            return relayed
        }
        return clientAddress.resolve(
            peer: context.remoteAddress, forwardedFor: request.headers[values: .xForwardedFor].joined(separator: ","))
    }

    /// The admin `secret` names, from `address`: a known credential passes whatever the address
    /// did before; an unknown one is refused, and counted unless the address is already blocked.
    func authenticate(
        _ secret: String, from address: String?, credentials: AdminCredentialStore, logger: Logger
    ) async throws -> AdminPrincipal {
        if let principal = try await credentials.authenticate(secret, logger: logger) { return principal }
        logger.notice("admin call with an unknown credential")
        try await refuseUnknown(from: address, logger: logger)
    }

    /// Answers an unknown credential: `TOO_MANY_ATTEMPTS_TRY_LATER` from a blocked address, else
    /// `INVALID_CREDENTIALS` after counting it.
    func refuseUnknown(from address: String?, logger: Logger) async throws -> Never {
        try await checkNotBlocked(address, logger: logger)
        try await count(address, logger: logger)
        throw FirebaseError.invalidCredentials
    }

    func checkNotBlocked(_ address: String?, logger: Logger) async throws {
        guard RateLimiter.applies(limit: limit, key: address), let address else { return }
        let hashed = RateLimiter.hashedKey(address)
        let rows = try await client.query(
            """
            SELECT ceil(extract(epoch FROM window_start) + \(RateLimiter.window) - extract(epoch FROM now()))::bigint
            FROM rate_counters
            WHERE tenant_id = \(scope: .project) AND bucket = \(Self.bucket) AND key = \(hashed)
                AND window_start = to_timestamp(floor(extract(epoch FROM now()) / \(RateLimiter.window)) * \(RateLimiter.window))
                AND count >= \(limit)
            """, logger: logger)
        for try await remaining in rows.decode(Int64.self) {
            throw FirebaseError.tooManyAttempts(retryAfterSeconds: Int(max(1, remaining)))
        }
    }

    func count(_ address: String?, logger: Logger) async throws {
        guard RateLimiter.applies(limit: limit, key: address), let address else { return }
        // The attempt that reaches the limit is still answered 401; the next unknown ones are refused.
        _ = try await client.withConnection { connection in
            try await RateLimiter.increment(
                connection, scope: .project, bucket: Self.bucket, key: address, logger: logger)
        }
    }
}
