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

    /// Runs `body` with a client whose `search_path` is a new, empty schema with every migration
    /// applied; the schema is dropped afterwards. Tests therefore never see each other's rows.
    static func withDatabase<T: Sendable>(
        migrate: Bool = true, _ body: @Sendable (Database) async throws -> T
    ) async throws -> T {
        let url = try #require(url)
        let schema = "test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16))"
        let base = try PostgresClient.Configuration.fromURL(url)
        let admin = PostgresClient(configuration: base, backgroundLogger: logger)
        var scoped = base
        scoped.options.additionalStartupParameters = [("search_path", schema)]
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
