import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import TesseraShared

public struct CleanupWorkerConfiguration: Sendable {
    public var hostname: String = "127.0.0.1"
    public var port: Int = 8083
    public var directoryURL: String = "http://127.0.0.1:8082"
    public var internalSecret: String
    public var interval: Duration = .seconds(60)

    public init(internalSecret: String) {
        self.internalSecret = internalSecret
    }

    /// Reads the keys documented in docs/configuration.md.
    public init(environment env: ConfigReader) throws {
        self.init(internalSecret: try env.required("TESSERA_INTERNAL_SECRET"))
        hostname = env.string("TESSERA_HTTP_HOST", default: hostname)
        port = try env.int("TESSERA_HTTP_PORT", default: port)
        directoryURL = env.string("TESSERA_DIRECTORY_URL", default: directoryURL)
        interval = try env.duration("CLEANUP_INTERVAL", default: interval)
    }
}

/// One sweep. For now a sweep only proves the directory answers over the authenticated internal
/// API; the anonymous-account cleanup and housekeeping are issue #6.
public struct Sweeper: Sendable {
    let directory: DirectoryClient

    public init(directory: DirectoryClient) {
        self.directory = directory
    }

    public func sweep(logger: Logger) async throws -> DirectoryStatus {
        let status = try await directory.get(
            InternalPath.status, as: DirectoryStatus.self, requestID: Secrets.randomAlphanumeric(20), logger: logger)
        logger.info("sweep finished", metadata: ["directory.schemaVersion": "\(status.schemaVersion)"])
        return status
    }
}

/// The long-running loop: a sweep every interval until graceful shutdown. A failed sweep is logged
/// and retried at the next tick; the loop never dies of it.
struct SweepLoop: Service {
    let sweeper: Sweeper
    let interval: Duration
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    do {
                        _ = try await sweeper.sweep(logger: logger)
                    } catch {
                        logger.warning("sweep failed", metadata: ["error": "\(error)"])
                    }
                    try await Task.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            return
        }
    }
}

/// Builds the worker: its loop and a small HTTP server for health checks.
public func buildCleanupWorker(
    configuration: CleanupWorkerConfiguration, logger: Logger
) -> some ApplicationProtocol {
    let httpClient = InternalHTTPClient.make()
    let directory = DirectoryClient(
        httpClient: httpClient, baseURL: configuration.directoryURL, secret: configuration.internalSecret)
    let sweeper = Sweeper(directory: directory)
    let router = Router(context: TesseraRequestContext.self)
    router.add(middleware: FirebaseErrorMiddleware<TesseraRequestContext>())
    router.get("/healthz") { _, _ in JSONResponse(HealthStatus()) }
    router.get("/readyz") { _, context in
        _ = try await directory.get(
            InternalPath.status, as: DirectoryStatus.self, requestID: context.requestID, logger: context.logger)
        return JSONResponse(HealthStatus())
    }
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.hostname, port: configuration.port), serverName: nil),
        services: [
            HTTPClientService(client: httpClient, logger: logger),
            SweepLoop(sweeper: sweeper, interval: configuration.interval, logger: logger),
        ],
        logger: logger)
}

/// `run-once`: one sweep, then exit (non-zero when the sweep failed).
public func runOnce(configuration: CleanupWorkerConfiguration, logger: Logger) async throws -> DirectoryStatus {
    let httpClient = InternalHTTPClient.make()
    let directory = DirectoryClient(
        httpClient: httpClient, baseURL: configuration.directoryURL, secret: configuration.internalSecret)
    do {
        let status = try await Sweeper(directory: directory).sweep(logger: logger)
        try await httpClient.shutdown()
        return status
    } catch {
        try? await httpClient.shutdown()
        throw error
    }
}
