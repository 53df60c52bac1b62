import AsyncHTTPClient
import Logging
import NIOCore
import ServiceLifecycle

/// The HTTP client for internal calls, and the service that shuts it down on graceful shutdown.
public enum InternalHTTPClient {
    /// A directory that refuses connections becomes a 503 at once, and one that does not answer the
    /// connection attempt within `connectTimeout` a 503 after it, instead of the whole call timeout.
    ///
    /// `connectionsPerHost` is above what the directory's hashing pool admits at once (its threads
    /// and `TESSERA_HASH_QUEUE`, 66 by default): sign-ins waiting for a hash each hold a connection,
    /// and with a limit at or below that, refreshes and lookups queued behind them in this client
    /// (issue 26).
    public static func make(connectTimeout: Duration = .seconds(1), connectionsPerHost: Int = 256) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(
            connect: .milliseconds(Int64(connectTimeout.timeInterval * 1000)), read: nil)
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerHost)
        // A connection attempt that fails fails the calls waiting for it (each a 503 with
        // Retry-After), and the next call tries again at once. AsyncHTTPClient's default retries
        // with an exponential backoff, during which calls wait: after the directory had been down
        // for a while, the token service went on answering 503 (its /readyz too) for 10-25 s after
        // the directory was back (issue 26).
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .disabled
        // DirectoryClient starts its own client span (named by the internal path) and injects the
        // trace context itself; the client's generic span would be a second, nameless level.
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }
}

/// Keeps an `HTTPClient` alive while the service group runs and shuts it down after graceful
/// shutdown has begun (put it before the HTTP server in the group so that it stops after it).
public struct HTTPClientService: Service {
    let client: HTTPClient
    let logger: Logger

    public init(client: HTTPClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func run() async throws {
        try? await gracefulShutdown()
        do {
            try await client.shutdown()
        } catch {
            logger.warning("internal HTTP client shutdown failed", metadata: ["error": "\(error)"])
        }
    }
}
