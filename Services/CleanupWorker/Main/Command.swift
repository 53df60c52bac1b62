import ArgumentParser
import CleanupWorker
import Foundation
import Hummingbird
import Logging
import ServiceCommand
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
    @OptionGroup var options: ServeOptions

    func run() async throws {
        try await options.serve(
            "cleanup-worker", configuration: CleanupWorkerConfiguration.init(environment:),
            build: buildCleanupWorker(configuration:logger:))
    }
}

extension CleanupWorkerConfiguration: ListenConfiguration {}

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
