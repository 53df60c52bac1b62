import Foundation
import Logging
import PostgresNIO
import TesseraShared

extension PostgresClient.Configuration {
    /// Reads `postgres://user:password@host:port/database` (also `postgresql://`).
    public static func fromURL(_ text: String) throws -> PostgresClient.Configuration {
        guard let url = URLComponents(string: text), let scheme = url.scheme,
            scheme == "postgres" || scheme == "postgresql", let host = url.host, let user = url.user
        else { throw DatabaseURLError.invalid }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        var configuration = PostgresClient.Configuration(
            host: host, port: url.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: url.password.map { $0.removingPercentEncoding ?? $0 },
            database: database.isEmpty ? nil : database, tls: .disable)
        configuration.options.minimumConnections = 0
        configuration.options.maximumConnections = 20
        return configuration
    }

    /// The pool settings of docs/configuration.md (`DATABASE_POOL_MIN`, `DATABASE_POOL_MAX`,
    /// `DATABASE_KEEPALIVE`). PostgresNIO's pool starts a timer task whenever it parks a connection:
    /// a keep-alive timer for every connection while keep-alive is on, and an idle-timeout timer for
    /// every connection above the minimum. At one park per query that was about a tenth of the
    /// directory's CPU under refresh and lookup load, so by default the service's pool keeps 4
    /// connections open and sends no keep-alive queries.
    public mutating func applyPoolSettings(_ env: ConfigReader) throws {
        options.minimumConnections = try env.int("DATABASE_POOL_MIN", default: 4)
        options.maximumConnections = try env.int("DATABASE_POOL_MAX", default: options.maximumConnections)
        guard options.minimumConnections >= 0, options.maximumConnections >= 1,
            options.minimumConnections <= options.maximumConnections
        else {
            throw ConfigError.invalid("DATABASE_POOL_MIN/_MAX", "need 0 <= min <= max and max >= 1")
        }
        let keepAlive = try env.duration("DATABASE_KEEPALIVE", default: .zero)
        options.keepAliveBehavior = keepAlive > .zero ? .init(frequency: keepAlive) : nil
    }
}

public enum DatabaseURLError: Error, CustomStringConvertible {
    case invalid
    public var description: String { "DATABASE_URL must look like postgres://user:password@host:port/database" }
}

extension PSQLError {
    public var sqlState: String? { serverInfo?[.sqlState] }
}

extension PostgresClient {
    /// `withTransaction`, but the step that failed comes back as itself, not wrapped in
    /// `PostgresTransactionError`: an error thrown by `body` (a `FirebaseError` such as
    /// `TENANT_NOT_FOUND`), or the `PSQLError` of a `BEGIN` or `COMMIT` that lost the database, which
    /// `DatabaseErrorMiddleware` then answers with 503 (a wrapped one was a 500). The transaction is
    /// rolled back either way. Only one of the three can be set: a failed `BEGIN` runs no body, and
    /// `COMMIT` follows only a body that succeeded.
    func transaction<Result: Sendable>(
        logger: Logger, _ body: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        do {
            return try await withTransaction(logger: logger, body)
        } catch let error as PostgresTransactionError {
            throw error.beginError ?? error.closureError ?? error.commitError ?? error
        }
    }
}
