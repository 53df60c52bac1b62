import ArgumentParser
import CleanupWorker
import Foundation
import Hummingbird
import Logging
import TesseraShared

@main
struct CleanupWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cleanup-worker",
        abstract: "Tessera's background scheduler.",
        version: TesseraVersion.current,
        subcommands: [Serve.self, RunOnce.self],
        defaultSubcommand: Serve.self)
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the sweep loop and the health endpoints.")
    @Option(help: "Listen address (TESSERA_HTTP_HOST).") var hostname: String?
    @Option(help: "Listen port (TESSERA_HTTP_PORT).") var port: Int?
    @Option(help: "Log level (LOG_LEVEL).") var logLevel: String?

    func run() async throws {
        let executor = try TaskExecutorSetup.install()
        LogSetup.bootstrap(level: logLevel)
        let logger = Logger(label: "cleanup-worker")
        executor.log(to: logger)
        var configuration = try CleanupWorkerConfiguration(environment: ConfigReader())
        if let hostname { configuration.hostname = hostname }
        if let port { configuration.port = port }
        let tracing = try TraceExport.bootstrap(serviceName: "cleanup-worker")
        try await buildCleanupWorker(configuration: configuration, logger: logger).runUntilTerminated(
            tracing: tracing, shutdownTimeout: try ConfigReader().shutdownTimeout(), logger: logger)
    }
}

struct RunOnce: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run-once", abstract: "Run one sweep and exit.")
    @Option(help: "Log level (LOG_LEVEL).") var logLevel: String?

    func run() async throws {
        LogSetup.bootstrap(level: logLevel)
        let logger = Logger(label: "cleanup-worker")
        let report = try await runOnce(
            configuration: try CleanupWorkerConfiguration(environment: ConfigReader()), logger: logger)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(
            "sweep \(report.skipped ? "skipped" : "finished"): "
                + String(decoding: try encoder.encode(report), as: UTF8.self))
    }
}
