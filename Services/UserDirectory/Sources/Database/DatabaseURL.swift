import Foundation
import Logging
import NIOSSL
import PostgresNIO
import TesseraShared

/// One server of a `DATABASE_URL`.
public struct DatabaseEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// What `DATABASE_URL` names: the client configuration (of the first server, with the pool
/// settings), every server listed, and the TLS settings a probe of another server needs.
///
/// A libpq multi-host URL (`postgres://user:pw@host1:5432,host2:5432/db?target_session_attrs=read-write`)
/// lists the nodes of a replicated PostgreSQL; the directory then writes to whichever of them is the
/// writable primary and finds the new one after a failover (`Database`, issue 26).
public struct DatabaseTarget: Sendable {
    public var client: PostgresClient.Configuration
    public var endpoints: [DatabaseEndpoint]
    /// How often the directory checks that the server it writes to is still the writable primary
    /// (multi-host URLs only; `DATABASE_PRIMARY_CHECK_INTERVAL`).
    public var primaryCheckInterval: Duration = .seconds(5)
    /// How long a transaction whose `COMMIT` lost its connection may wait to learn whether it
    /// committed, from the primary (the new one after a failover) (`DATABASE_COMMIT_OUTCOME_WAIT`;
    /// docs/design-notes.md, "A COMMIT whose answer was lost"). Under the token service's internal
    /// timeout, or the token service answers 503 first.
    public var commitOutcomeWait: Duration = .seconds(4)
    let sslMode: String
    let rootCertificate: String?

    /// A single server, configured by hand (tests).
    public init(single client: PostgresClient.Configuration) {
        self.client = client
        endpoints = [DatabaseEndpoint(host: client.host ?? "127.0.0.1", port: client.port ?? 5432)]
        sslMode = "disable"
        rootCertificate = nil
    }

    /// Reads `postgres://user:password@host[:port][,host[:port]…]/database[?sslmode=…&sslrootcert=…
    /// &target_session_attrs=…]` (also `postgresql://`). `sslmode` as libpq names it
    /// (docs/protocol/admin.md#the-admin-plane): `disable` (the default here, as the local stack's PostgreSQL
    /// is on loopback), `prefer`, `require` (encrypted, the server not verified), `verify-ca` (its
    /// certificate chains to `sslrootcert`, or the system's roots) and `verify-full` (that, and it is for the
    /// host named). With several hosts, `target_session_attrs` may be `read-write` or `primary` (what the
    /// directory needs, and what it does when the parameter is absent); anything else is refused.
    public static func fromURL(_ text: String) throws -> DatabaseTarget {
        guard let schemeEnd = text.range(of: "://") else { throw DatabaseURLError.invalid }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let at = authority.lastIndex(of: "@")
        let hostList = at.map { authority[authority.index(after: $0)...] } ?? authority
        let endpoints = try hostList.split(separator: ",", omittingEmptySubsequences: false).map(Self.endpoint)
        guard let first = endpoints.first else { throw DatabaseURLError.invalid }
        // The rest of the URL is read for its first server only, by URLComponents.
        let single = text[..<hostList.startIndex] + "\(first)" + text[hostList.endIndex...]
        guard let url = URLComponents(string: String(single)), let scheme = url.scheme,
            scheme == "postgres" || scheme == "postgresql", url.host != nil, let user = url.user
        else { throw DatabaseURLError.invalid }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        var query: [String: String] = [:]
        for item in url.queryItems ?? [] { query[item.name] = item.value ?? "" }
        if endpoints.count > 1, let attrs = query["target_session_attrs"], attrs != "read-write", attrs != "primary" {
            throw DatabaseURLError.sessionAttributes
        }
        let sslMode = query["sslmode"] ?? "disable"
        var configuration = PostgresClient.Configuration(
            host: first.host, port: first.port, username: user.removingPercentEncoding ?? user,
            password: url.password.map { $0.removingPercentEncoding ?? $0 },
            database: database.isEmpty ? nil : database,
            tls: try PostgresClient.Configuration.tls(mode: sslMode, rootCertificate: query["sslrootcert"]))
        configuration.options.minimumConnections = 0
        configuration.options.maximumConnections = 10
        return DatabaseTarget(
            client: configuration, endpoints: endpoints, sslMode: sslMode, rootCertificate: query["sslrootcert"])
    }

    private init(
        client: PostgresClient.Configuration, endpoints: [DatabaseEndpoint], sslMode: String, rootCertificate: String?
    ) {
        self.client = client
        self.endpoints = endpoints
        self.sslMode = sslMode
        self.rootCertificate = rootCertificate
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`.
    private static func endpoint(_ text: Substring) throws -> DatabaseEndpoint {
        var host = text
        var port = 5432
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw DatabaseURLError.invalid }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let value = Int(after.dropFirst()) else { throw DatabaseURLError.invalid }
                port = value
            }
        } else if let colon = text.lastIndex(of: ":") {
            guard let value = Int(text[text.index(after: colon)...]) else { throw DatabaseURLError.invalid }
            host = text[..<colon]
            port = value
        }
        guard !host.isEmpty, (1...65535).contains(port) else { throw DatabaseURLError.invalid }
        return DatabaseEndpoint(host: String(host), port: port)
    }

    /// The client configuration for `endpoint`: the same user, database, TLS and pool settings.
    func client(for endpoint: DatabaseEndpoint) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: endpoint.host, port: endpoint.port, username: client.username, password: client.password,
            database: client.database, tls: client.tls)
        configuration.options = client.options
        return configuration
    }

    /// A single connection's configuration for `endpoint` (the primary probe), with `connectTimeout`.
    func connection(for endpoint: DatabaseEndpoint, connectTimeout: Duration) throws -> PostgresConnection.Configuration
    {
        var configuration = PostgresConnection.Configuration(
            host: endpoint.host, port: endpoint.port, username: client.username, password: client.password,
            database: client.database,
            tls: try PostgresClient.Configuration.connectionTLS(
                mode: sslMode, rootCertificate: rootCertificate))
        configuration.options.connectTimeout = .milliseconds(Int64(connectTimeout.timeInterval * 1000))
        return configuration
    }

    /// The pool settings of docs/configuration.md, and the primary check's interval.
    public mutating func applySettings(_ env: ConfigReader) throws {
        try client.applyPoolSettings(env)
        primaryCheckInterval = try env.duration("DATABASE_PRIMARY_CHECK_INTERVAL", default: primaryCheckInterval)
        guard primaryCheckInterval > .zero else {
            throw ConfigError.invalid("DATABASE_PRIMARY_CHECK_INTERVAL", "must be longer than zero")
        }
        commitOutcomeWait = try env.duration("DATABASE_COMMIT_OUTCOME_WAIT", default: commitOutcomeWait)
    }
}

extension PostgresClient.Configuration {
    /// `DatabaseTarget.fromURL(text).client`: the configuration of the URL's first server.
    public static func fromURL(_ text: String) throws -> PostgresClient.Configuration {
        try DatabaseTarget.fromURL(text).client
    }

    /// The pool settings of docs/configuration.md (`DATABASE_POOL_MIN`, `DATABASE_POOL_MAX`,
    /// `DATABASE_KEEPALIVE`). PostgresNIO's pool starts a timer task whenever it parks a connection:
    /// a keep-alive timer for every connection while keep-alive is on, and an idle-timeout timer for
    /// every connection above the minimum. The next lease cancels it, but a cancelled sleep keeps its
    /// task and a dispatch timer until it would have fired, 60 s later: under lookups at 64
    /// connections that grew the directory's heap by about 12 MB a run, to 58 MB (docs/scaling.md,
    /// "The database pool"). So by default the pool has a fixed size: it opens `DATABASE_POOL_MAX`
    /// connections at start, keeps them, and sends no keep-alive queries.
    public mutating func applyPoolSettings(_ env: ConfigReader) throws {
        options.maximumConnections = try env.int("DATABASE_POOL_MAX", default: options.maximumConnections)
        options.minimumConnections = try env.int("DATABASE_POOL_MIN", default: options.maximumConnections)
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
        guard let tls = try tlsConfiguration(mode: mode, rootCertificate: rootCertificate) else { return .disable }
        return mode == "prefer" || mode == "allow" ? try .prefer(tls) : try .require(tls)
    }

    /// The same, for a single `PostgresConnection`.
    static func connectionTLS(mode: String, rootCertificate: String?) throws -> PostgresConnection.Configuration.TLS {
        guard let tls = try tlsConfiguration(mode: mode, rootCertificate: rootCertificate) else { return .disable }
        let context = try NIOSSLContext(configuration: tls)
        return mode == "prefer" || mode == "allow" ? .prefer(context) : .require(context)
    }

    /// The TLS configuration of an `sslmode` (nil for `disable`).
    private static func tlsConfiguration(mode: String, rootCertificate: String?) throws -> TLSConfiguration? {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate, !rootCertificate.isEmpty {
            guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                throw DatabaseURLError.sslRootCertificate
            }
            tls.trustRoots = .file(rootCertificate)
        }
        switch mode {
        case "disable":
            return nil
        case "prefer", "allow", "require":
            tls.certificateVerification = .none
        case "verify-ca":
            tls.certificateVerification = .noHostnameVerification
        case "verify-full":
            tls.certificateVerification = .fullVerification
        default:
            throw DatabaseURLError.sslMode
        }
        return tls
    }
}

public enum DatabaseURLError: Error, CustomStringConvertible {
    case invalid
    case sslMode
    case sslRootCertificate
    case unusable(String)
    case sessionAttributes

    public var description: String {
        switch self {
        case .invalid: "DATABASE_URL must look like postgres://user:password@host:port/database"
        case .sslMode: "DATABASE_URL: sslmode must be disable, prefer, require, verify-ca or verify-full"
        case .sslRootCertificate: "DATABASE_URL: the sslrootcert file cannot be read"
        case .unusable(let why): "DATABASE_URL: PostgreSQL cannot be used (\(why))"
        case .sessionAttributes:
            "DATABASE_URL: with several hosts, target_session_attrs must be read-write or primary (the directory writes)"
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
    /// Among others, `txid_status` of a transaction id the server has not assigned yet ("is in the
    /// future"): a server that never saw the transaction.
    case invalidParameterValue = "22023"
}

extension PSQLError {
    public var sqlState: String? { serverInfo?[.sqlState] }

    /// The server answered with `state`.
    public func has(_ state: SQLState) -> Bool { code == .server && sqlState == state.rawValue }

    /// The connection is gone or going: lost, closed, or ended by the server ("connection
    /// exception" 08…, "operator intervention" 57P…: shutting down, crashed, starting up).
    var closesConnection: Bool {
        switch code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
            return true
        case .server:
            let state = sqlState ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P")
        default:
            return false
        }
    }

    /// A dependency outage, not a fault of the request: a connection that closes
    /// (`closesConnection`), the pool closed, and a write sent to a server that a failover has just
    /// made a standby (25006). Answered 503 (`DatabaseErrorMiddleware`), and with several servers a
    /// reason to look for the primary again (`Database`).
    public var isOutage: Bool {
        closesConnection || code == .poolClosed || (code == .server && sqlState == "25006")
    }
}
