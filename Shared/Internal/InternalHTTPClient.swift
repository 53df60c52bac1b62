import AsyncHTTPClient
import Logging
import NIOCore
import ServiceLifecycle

/// The HTTP client for internal calls, and the service that shuts it down on graceful shutdown.
public enum InternalHTTPClient {
    /// Connection attempts are retried with backoff only until `connectTimeout`: a directory that
    /// refuses connections becomes a 503 within about that time instead of the whole call timeout.
    public static func make(connectTimeout: Duration = .seconds(1), connectionsPerHost: Int = 64) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(
            connect: .milliseconds(Int64(connectTimeout.timeInterval * 1000)), read: nil)
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerHost)
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
