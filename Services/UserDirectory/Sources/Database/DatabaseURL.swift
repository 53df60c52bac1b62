import Foundation
import Logging
import NIOSSL
import PostgresNIO
import TesseraShared

extension PostgresClient.Configuration {
    /// Reads `postgres://user:password@host:port/database[?sslmode=…&sslrootcert=…]` (also
    /// `postgresql://`). `sslmode` as libpq names it (API.md A.12): `disable` (the default here, as the
    /// local stack's PostgreSQL is on loopback), `prefer`, `require` (encrypted, the server not
    /// verified), `verify-ca` (its certificate chains to `sslrootcert`, or the system's roots) and
    /// `verify-full` (that, and it is for the host named).
    public static func fromURL(_ text: String) throws -> PostgresClient.Configuration {
        guard let url = URLComponents(string: text), let scheme = url.scheme,
            scheme == "postgres" || scheme == "postgresql", let host = url.host, let user = url.user
        else { throw DatabaseURLError.invalid }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        var query: [String: String] = [:]
        for item in url.queryItems ?? [] { query[item.name] = item.value ?? "" }
        var configuration = PostgresClient.Configuration(
            host: host, port: url.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: url.password.map { $0.removingPercentEncoding ?? $0 },
            database: database.isEmpty ? nil : database,
            tls: try tls(mode: query["sslmode"] ?? "disable", rootCertificate: query["sslrootcert"]))
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

extension PostgresClient.Configuration {
    static func tls(mode: String, rootCertificate: String?) throws -> PostgresClient.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate, !rootCertificate.isEmpty {
            guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                throw DatabaseURLError.sslRootCertificate
            }
            tls.trustRoots = .file(rootCertificate)
        }
        switch mode {
        case "disable":
            return .disable
        case "prefer", "allow":
            tls.certificateVerification = .none
            return try .prefer(tls)
        case "require":
            tls.certificateVerification = .none
            return try .require(tls)
        case "verify-ca":
            tls.certificateVerification = .noHostnameVerification
            return try .require(tls)
        case "verify-full":
            tls.certificateVerification = .fullVerification
            return try .require(tls)
        default:
            throw DatabaseURLError.sslMode
        }
    }
}

public enum DatabaseURLError: Error, CustomStringConvertible {
    case invalid
    case sslMode
    case sslRootCertificate
    case unusable(String)

    public var description: String {
        switch self {
        case .invalid: "DATABASE_URL must look like postgres://user:password@host:port/database"
        case .sslMode: "DATABASE_URL: sslmode must be disable, prefer, require, verify-ca or verify-full"
        case .sslRootCertificate: "DATABASE_URL: the sslrootcert file cannot be read"
        case .unusable(let why): "DATABASE_URL: PostgreSQL cannot be used (\(why))"
        }
    }
}

/// The SQLSTATEs the directory tells apart (PostgreSQL's Appendix A), by name. No statement or
/// function of the schema raises its own: business outcomes come back as rows, and these are the
/// server's own conditions.
public enum SQLState: String, Sendable {
    /// A row another request inserted first (the `users` email index, `federated_identities`, …).
    case uniqueViolation = "23505"
    /// A NUL character or an invalid byte sequence in text.
    case characterNotInRepertoire = "22021"
    case untranslatableCharacter = "22P05"
}

extension PSQLError {
    public var sqlState: String? { serverInfo?[.sqlState] }

    /// The server answered with `state`.
    public func has(_ state: SQLState) -> Bool { code == .server && sqlState == state.rawValue }
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
