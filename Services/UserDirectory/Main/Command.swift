import ArgumentParser
import Hummingbird
import Logging
import TesseraShared
import UserDirectory

@main
struct UserDirectoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user-directory",
        abstract: "Tessera's user directory: the owner of PostgreSQL, the admin API and the internal API.",
        version: TesseraVersion.current,
        subcommands: [Serve.self, Migrate.self],
        defaultSubcommand: Serve.self)
}

struct CommonOptions: ParsableArguments {
    @Option(help: "Listen address (TESSERA_HTTP_HOST).") var hostname: String?
    @Option(help: "Listen port (TESSERA_HTTP_PORT).") var port: Int?
    @Option(help: "Log level (LOG_LEVEL).") var logLevel: String?

    func logger(_ label: String) -> Logger {
        LogSetup.bootstrap(level: logLevel)
        return Logger(label: label)
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the admin and internal APIs.")
    @OptionGroup var options: CommonOptions

    func run() async throws {
        let executor = try TaskExecutorSetup.install()
        let logger = options.logger("user-directory")
        executor.log(to: logger)
        var configuration = try DirectoryConfiguration(environment: ConfigReader())
        if let hostname = options.hostname { configuration.hostname = hostname }
        if let port = options.port { configuration.port = port }
        let tracing = try TraceExport.bootstrap(serviceName: "user-directory")
        let app = try await buildDirectoryApplication(configuration: configuration, logger: logger)
        try await app.runUntilTerminated(
            tracing: tracing, shutdownTimeout: try ConfigReader().shutdownTimeout(), logger: logger)
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending database migrations and exit.")
    @OptionGroup var options: CommonOptions

    func run() async throws {
        let logger = options.logger("user-directory")
        let env = ConfigReader()
        let applied = try await runMigrations(
            configuration: try .fromURL(try env.required("DATABASE_URL")), logger: logger)
        print(applied.isEmpty ? "schema is up to date" : "applied migrations \(applied)")
    }
}
