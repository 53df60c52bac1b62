import Foundation
import Logging
import PostgresNIO
import Testing

@testable import TesseraShared
@testable import UserDirectory

/// Real-PostgreSQL tests run against `TEST_DATABASE_URL` (the stack's `tessera_test` database).
/// `make test` sets `TESSERA_REQUIRE_DATABASE=1`, which turns a missing database into a failure.
enum PostgresSupport {
    static let url = ProcessInfo.processInfo.environment["TEST_DATABASE_URL"]
    static let required = ProcessInfo.processInfo.environment["TESSERA_REQUIRE_DATABASE"] == "1"
    static var available: Bool { url != nil }
    static let logger = Logger(label: "tests")

    /// Swift Testing starts every test at once; each database test holds a few connections, and the
    /// stack's server has 200. At most this many database tests run at a time.
    static let slots = TestSlots(12)

    /// Runs `body` with a client whose `search_path` is a new, empty schema with every migration
    /// applied; the schema is dropped afterwards. Tests therefore never see each other's rows.
    static func withDatabase<T: Sendable>(
        migrate: Bool = true, _ body: @Sendable (Database) async throws -> T
    ) async throws -> T {
        try await slots.run { try await withSchema(migrate: migrate, body) }
    }

    private static func withSchema<T: Sendable>(
        migrate: Bool, _ body: @Sendable (Database) async throws -> T
    ) async throws -> T {
        let url = try #require(url)
        let schema = "test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16))"
        var base = try PostgresClient.Configuration.fromURL(url)
        // Tests run in parallel against one server (200 connections): a small pool each, or a full
        // run exhausts the server's connection slots.
        base.options.maximumConnections = 2
        let admin = PostgresClient(configuration: base, backgroundLogger: logger)
        var scoped = base
        scoped.options.additionalStartupParameters = [("search_path", schema)]
        scoped.options.maximumConnections = 6
        let client = Database(client: scoped, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await admin.run() }
            group.addTask { try await client.run() }
            defer { group.cancelAll() }
            try await admin.query("CREATE SCHEMA \(unescaped: schema)", logger: logger)
            do {
                if migrate { try await MigrationRunner(client: client).migrate(logger: logger) }
                let result = try await body(client)
                try await admin.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
                return result
            } catch {
                _ = try? await admin.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
                throw error
            }
        }
    }
}

/// A counting semaphore for tests: `run` waits for one of `count` slots.
actor TestSlots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ count: Int) { free = count }

    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
}

@Test("the real-PostgreSQL tests have a database when make test requires one")
func databaseIsConfiguredWhenRequired() {
    if PostgresSupport.required {
        #expect(PostgresSupport.available, "TEST_DATABASE_URL is not set but TESSERA_REQUIRE_DATABASE=1")
    }
}

func expectFirebaseError(
    _ code: String, _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
)
    async
{
    do {
        try await body()
        Issue.record("expected \(code), got success", sourceLocation: sourceLocation)
    } catch let error as FirebaseError {
        #expect(error.code == code, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code), got \(String(reflecting: error))", sourceLocation: sourceLocation)
    }
}
