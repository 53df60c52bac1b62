import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// Per-scope abuse limits (issue #7), counted in PostgreSQL so every replica shares them. Fixed
/// one-hour windows; 0 switches a limit off. The defaults start from Firebase's published account
/// creation limit (100 per IP per hour); the others are Tessera's.
public struct RateLimitSettings: StoredSettings, Sendable {
    /// New accounts (anonymous, email/password, first federated or custom-token sign-in) per client IP.
    public var signUpsPerIpPerHour: Int
    /// Password sign-in attempts per account (email), successful or not.
    public var passwordSignInsPerAccountPerHour: Int
    /// Password sign-in attempts per client IP.
    public var passwordSignInsPerIpPerHour: Int
    /// Verification, reset and email-change mails per account.
    public var oobEmailsPerAccountPerHour: Int
    /// Sign-ins started with an identity provider (`createAuthUri`, the hosted handler) per client IP:
    /// each keeps a row until it is used or expires.
    public var idpSignInsPerIpPerHour: Int
    /// SMS codes (docs/protocol/phone.md#abuse-controls): to one number, asked for by one address, to one
    /// region, and the scope's daily budget (SMS pumping: someone making the service text numbers whose
    /// operator pays them per message).
    public var smsPerNumberPerHour: Int = 5
    public var smsPerIpPerHour: Int = 20
    public var smsPerRegionPerHour: Int = 500
    public var smsPerScopePerDay: Int = 1000

    public static let defaults = RateLimitSettings(
        signUpsPerIpPerHour: 100, passwordSignInsPerAccountPerHour: 30, passwordSignInsPerIpPerHour: 300,
        oobEmailsPerAccountPerHour: 10, idpSignInsPerIpPerHour: 300)

    public init(
        signUpsPerIpPerHour: Int, passwordSignInsPerAccountPerHour: Int, passwordSignInsPerIpPerHour: Int,
        oobEmailsPerAccountPerHour: Int, idpSignInsPerIpPerHour: Int
    ) {
        self.signUpsPerIpPerHour = signUpsPerIpPerHour
        self.passwordSignInsPerAccountPerHour = passwordSignInsPerAccountPerHour
        self.passwordSignInsPerIpPerHour = passwordSignInsPerIpPerHour
        self.oobEmailsPerAccountPerHour = oobEmailsPerAccountPerHour
        self.idpSignInsPerIpPerHour = idpSignInsPerIpPerHour
    }

    /// A limit the stored JSON lacks (written before the limit existed) has its default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = Self.defaults
        signUpsPerIpPerHour =
            try container.decodeIfPresent(Int.self, forKey: .signUpsPerIpPerHour) ?? defaults.signUpsPerIpPerHour
        passwordSignInsPerAccountPerHour =
            try container.decodeIfPresent(Int.self, forKey: .passwordSignInsPerAccountPerHour)
            ?? defaults.passwordSignInsPerAccountPerHour
        passwordSignInsPerIpPerHour =
            try container.decodeIfPresent(Int.self, forKey: .passwordSignInsPerIpPerHour)
            ?? defaults.passwordSignInsPerIpPerHour
        oobEmailsPerAccountPerHour =
            try container.decodeIfPresent(Int.self, forKey: .oobEmailsPerAccountPerHour)
            ?? defaults.oobEmailsPerAccountPerHour
        idpSignInsPerIpPerHour =
            try container.decodeIfPresent(Int.self, forKey: .idpSignInsPerIpPerHour) ?? defaults.idpSignInsPerIpPerHour
        smsPerNumberPerHour =
            try container.decodeIfPresent(Int.self, forKey: .smsPerNumberPerHour) ?? defaults.smsPerNumberPerHour
        smsPerIpPerHour = try container.decodeIfPresent(Int.self, forKey: .smsPerIpPerHour) ?? defaults.smsPerIpPerHour
        smsPerRegionPerHour =
            try container.decodeIfPresent(Int.self, forKey: .smsPerRegionPerHour) ?? defaults.smsPerRegionPerHour
        smsPerScopePerDay =
            try container.decodeIfPresent(Int.self, forKey: .smsPerScopePerDay) ?? defaults.smsPerScopePerDay
    }

}

enum RateLimiter {
    static let window: Int64 = 3600

    /// Whether a hit counts at all: a limit of 0 is off, and a request without the key (no client
    /// address, say) has nothing to count against.
    static func applies(limit: Int, key: String?) -> Bool {
        limit > 0 && !(key ?? "").isEmpty
    }

    /// How a key (an address, an email) is stored.
    static func hashedKey(_ key: String) -> String { String(Secrets.tokenHash(key).prefix(32)) }

    /// Counts one event against `limit` in the current window of (`scope`, `bucket`, `key`); past the
    /// limit, `TOO_MANY_ATTEMPTS_TRY_LATER` with `Retry-After` = the rest of the window. Keys are
    /// stored hashed (they are addresses and emails). Inside a transaction that later fails, the
    /// count is rolled back with it.
    static func hit(
        _ connection: PostgresConnection, scope: Scope, bucket: String, key: String?, limit: Int,
        window: Int64 = window, refusal: ((Int) -> FirebaseError)? = nil, logger: Logger
    ) async throws {
        guard applies(limit: limit, key: key), let key else { return }
        let (count, remaining) = try await increment(
            connection, scope: scope, bucket: bucket, key: key, window: window, logger: logger)
        if count > limit {
            logger.notice(
                "rate limit reached",
                metadata: ["tenant.id": .string(scope.key), "rate.bucket": .string(bucket), "rate.limit": "\(limit)"])
            let retryAfter = Int(max(1, remaining))
            throw refusal?(retryAfter) ?? FirebaseError.tooManyAttempts(retryAfterSeconds: retryAfter)
        }
    }

    /// Counts one event of (`scope`, `bucket`, `key`) in the current window; returns the window's count
    /// and the seconds left in it.
    static func increment(
        _ connection: PostgresConnection, scope: Scope, bucket: String, key: String, window: Int64 = window,
        logger: Logger
    ) async throws -> (count: Int, remaining: Int64) {
        let rows = try await connection.query(
            """
            INSERT INTO rate_counters (tenant_id, bucket, key, window_start, count)
            VALUES (\(scope: scope), \(bucket), \(hashedKey(key)), to_timestamp(floor(extract(epoch FROM now()) / \(window)) * \(window)), 1)
            ON CONFLICT (tenant_id, bucket, key, window_start) DO UPDATE SET count = rate_counters.count + 1
            RETURNING count, ceil(extract(epoch FROM window_start) + \(window) - extract(epoch FROM now()))::bigint
            """, logger: logger)
        for try await row in rows.decode((Int, Int64).self) { return row }
        return (0, window)
    }

    /// The count of (`scope`, `bucket`, `key`) in the current window, without adding to it, and the
    /// seconds left in the window.
    static func count(
        _ connection: PostgresConnection, scope: Scope, bucket: String, key: String, logger: Logger
    ) async throws -> (count: Int, remaining: Int64) {
        let rows = try await connection.query(
            """
            SELECT count, ceil(extract(epoch FROM window_start) + \(window) - extract(epoch FROM now()))::bigint
            FROM rate_counters
            WHERE tenant_id = \(scope: scope) AND bucket = \(bucket) AND key = \(hashedKey(key))
                AND window_start = to_timestamp(floor(extract(epoch FROM now()) / \(window)) * \(window))
            """, logger: logger)
        for try await row in rows.decode((Int, Int64).self) { return row }
        return (0, window)
    }
}
