import ArgumentParser
import Hummingbird
import Logging
import ServiceCommand
import TesseraShared
import UserDirectory

@main
struct UserDirectoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user-directory",
        abstract: "Tessera's user directory: the owner of PostgreSQL, the admin API and the internal API.",
        version: TesseraVersion.current,
        subcommands: [Serve.self, Migrate.self, HashWorkerCommand.self],
        defaultSubcommand: Serve.self)
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the admin and internal APIs.")
    @OptionGroup var options: ServeOptions

    func run() async throws {
        try await options.serve(
            "user-directory", configuration: DirectoryConfiguration.init(environment:),
            build: buildDirectoryApplication(configuration:logger:))
    }
}

extension DirectoryConfiguration: ListenConfiguration {}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending database migrations and exit.")
    @OptionGroup var options: ServeOptions

    func run() async throws {
        let logger = options.logger("user-directory")
        let env = ConfigReader()
        let applied = try await runMigrations(
            configuration: try DirectoryConfiguration.databaseTarget(env),
            startTimeout: try env.duration("TESSERA_DATABASE_START_TIMEOUT", default: .seconds(30)), logger: logger)
        print(applied.isEmpty ? "schema is up to date" : "applied migrations \(applied)")
    }
}

/// The password hashing process the directory starts with `TESSERA_HASH_ISOLATION=process`; not for
/// operators to run.
struct HashWorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hash-worker", abstract: "Hash passwords for the directory that started this process.",
        shouldDisplay: false)
    @Option var channels: Int
    @Option(name: .customLong("group-nice")) var groupNice: Int
    @Option var priority: String
    @Option var cgroup: String?

    func run() throws {
        // The directory's own log setup (LOG_FORMAT, LOG_LEVEL from the environment it passed on), so
        // that the worker's few lines read like the directory's.
        LogSetup.bootstrap(level: nil)
        let code = HashWorkerProcess.run(
            channels: channels, groupNice: groupNice, cgroup: cgroup,
            priority: ThreadPriority(rawValue: priority) ?? .idle)
        if code != 0 { throw ExitCode(code) }
    }
}
