import ArgumentParser
import Hummingbird
import Logging
import TesseraShared

/// A service's configuration as far as `serve` needs it: where it listens.
public protocol ListenConfiguration: Sendable {
    var hostname: String { get set }
    var port: Int { get set }
}

/// The options every service's `serve` takes; the command line wins over the environment.
public struct ServeOptions: ParsableArguments {
    @Option(help: "Listen address (TESSERA_HTTP_HOST).") public var hostname: String?
    @Option(help: "Listen port (TESSERA_HTTP_PORT).") public var port: Int?
    @Option(help: "Log level (LOG_LEVEL).") public var logLevel: String?

    public init() {}

    /// Logging set up at `--log-level` (else LOG_LEVEL), and a logger labelled `service`.
    public func logger(_ service: String) -> Logger {
        LogSetup.bootstrap(level: logLevel)
        return Logger(label: service)
    }

    /// What `serve` does for each of the three services, in one place: the task executor, logging,
    /// the configuration from the environment with the listen address from the command line, trace
    /// export, then the application until SIGTERM or SIGINT within `TESSERA_SHUTDOWN_TIMEOUT`.
    public func serve<Configuration: ListenConfiguration, App: ApplicationProtocol>(
        _ service: String, configuration read: (ConfigReader) throws -> Configuration,
        build: (Configuration, Logger) async throws -> App
    ) async throws {
        let executor = try TaskExecutorSetup.install()
        let logger = logger(service)
        executor.log(to: logger)
        let environment = ConfigReader()
        var configuration = try read(environment)
        if let hostname { configuration.hostname = hostname }
        if let port { configuration.port = port }
        let tracing = try TraceExport.bootstrap(serviceName: service)
        let app = try await build(configuration, logger)
        try await app.runUntilTerminated(
            tracing: tracing, shutdownTimeout: try environment.shutdownTimeout(), logger: logger)
    }
}
