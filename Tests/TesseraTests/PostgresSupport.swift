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

    /// Runs `body` with a client whose `search_path` is a schema of its own: with every migration
    /// applied and only the rows the migrations insert (a `SchemaPool` schema, by default), or new and
    /// empty when `migrate` is false. Tests therefore never see each other's rows. `reuse: false`
    /// asks for a schema migrated for this test alone, for a test that reads the planner's statistics.
    static func withDatabase<T: Sendable>(
        migrate: Bool = true, reuse: Bool = true, _ body: @Sendable (Database) async throws -> T
    ) async throws -> T {
        try await withSchema(migrated: migrate, reuse: reuse) { configuration in
            let client = Database(client: configuration, logger: logger)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await client.run() }
                defer { group.cancelAll() }
                if migrate && !reuse { try await MigrationRunner(client: client).migrate(logger: logger) }
                return try await body(client)
            }
        }
    }

    /// Runs `body` with the client configuration of a schema of its own (its `search_path`), within one
    /// of the `slots`: a pooled schema with every migration applied (`migrated`), or a new, empty one,
    /// which is dropped afterwards. A pooled schema goes back to the pool only when `body` returned and
    /// the schema could be reset; otherwise it is dropped.
    static func withSchema<T: Sendable>(
        migrated: Bool, reuse: Bool = true, connections: Int = 6,
        _ body: @Sendable (PostgresClient.Configuration) async throws -> T
    ) async throws -> T {
        let url = try #require(url)
        let base = try {
            var base = try PostgresClient.Configuration.fromURL(url)
            // Tests run in parallel against one server (200 connections): a small pool each, or a full
            // run exhausts the server's connection slots.
            base.options.maximumConnections = 2
            return base
        }()
        return try await slots.run {
            let admin = PostgresClient(configuration: base, backgroundLogger: logger)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await admin.run() }
                defer { group.cancelAll() }
                let pooled = migrated && reuse
                let schema =
                    pooled
                    ? try await SchemaPool.shared.take(admin: admin, base: base)
                    : try await SchemaPool.create(admin: admin, base: base, migrate: false, prefix: "test_")
                var scoped = base
                scoped.options.additionalStartupParameters = [("search_path", schema)]
                scoped.options.maximumConnections = connections
                let result: T
                do {
                    result = try await body(scoped)
                } catch {
                    _ = try? await admin.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
                    throw error
                }
                if pooled {
                    await SchemaPool.shared.giveBack(schema, admin: admin)
                } else {
                    try await admin.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
                }
                return result
            }
        }
    }
}

/// Migrated schemas, reused from test to test: a new schema with every migration applied costs about
/// 110 ms of CPU here (75 ms of it PostgreSQL's DDL), which a few hundred tests paid each, more than
/// a third of the Swift suite's time. A schema a test is done with is reset instead, in one statement:
/// every table's rows deleted and the pristine `template` schema's rows (those the migrations insert)
/// copied back, and the sequences set to the template's. A schema whose relations or functions differ
/// from the template's (a test created a table) is dropped instead, as is one whose test threw.
///
/// The pooled schemas are named `tpool_<pid>_<n>` and outlive the test process, which has no hook at
/// its end; the next run drops those of processes that are gone (`make test` starts from an empty
/// database anyway).
actor SchemaPool {
    static let shared = SchemaPool()

    private var idle: [String] = []
    private var template: Task<String, any Error>?
    private var created = 0
    private let prefix = "tpool_\(getpid())_"

    /// An idle pooled schema, or a new, migrated one.
    func take(admin: PostgresClient, base: PostgresClient.Configuration) async throws -> String {
        _ = try await templateSchema(admin: admin, base: base)
        if let schema = idle.popLast() { return schema }
        created += 1
        let name = "\(prefix)\(created)"
        return try await Self.create(admin: admin, base: base, migrate: true, name: name)
    }

    /// Resets `schema` to the template's rows and keeps it for the next test, or drops it when it
    /// cannot be reset.
    func giveBack(_ schema: String, admin: PostgresClient) async {
        guard let template = try? await template?.value else { return }
        do {
            try await admin.query(PostgresQuery(unsafeSQL: Self.resetStatement(schema, to: template)), logger: logger)
            idle.append(schema)
        } catch {
            _ = try? await admin.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
        }
    }

    private func templateSchema(admin: PostgresClient, base: PostgresClient.Configuration) async throws -> String {
        if let template { return try await template.value }
        let name = "\(prefix)template"
        let task = Task {
            try await Self.dropLeftovers(admin: admin)
            return try await Self.create(admin: admin, base: base, migrate: true, name: name)
        }
        template = task
        return try await task.value
    }

    private var logger: Logger { PostgresSupport.logger }

    /// Creates the schema `name` (or a new `prefix…` name), migrated when `migrate`.
    static func create(
        admin: PostgresClient, base: PostgresClient.Configuration, migrate: Bool, prefix: String = "",
        name: String? = nil
    ) async throws -> String {
        let logger = PostgresSupport.logger
        let schema =
            name ?? prefix + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try await admin.query("CREATE SCHEMA \(unescaped: schema)", logger: logger)
        guard migrate else { return schema }
        var scoped = base
        scoped.options.additionalStartupParameters = [("search_path", schema)]
        let client = Database(client: scoped, logger: logger)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await client.run() }
                defer { group.cancelAll() }
                try await MigrationRunner(client: client).migrate(logger: logger)
            }
        } catch {
            _ = try? await admin.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
            throw error
        }
        return schema
    }

    /// Drops the pooled schemas of test processes that are no longer running.
    static func dropLeftovers(admin: PostgresClient) async throws {
        var stale: [String] = []
        let rows = try await admin.query(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'tpool\\_%'", logger: PostgresSupport.logger)
        for try await name in rows.decode(String.self) {
            let parts = name.split(separator: "_")
            guard parts.count == 3, let pid = pid_t(parts[1]), pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { stale.append(name) }
        }
        for name in stale {
            _ = try? await admin.query("DROP SCHEMA \(unescaped: name) CASCADE", logger: PostgresSupport.logger)
        }
    }

    /// One statement that gives `schema` the rows and sequence values of `template`, or fails (and
    /// changes nothing) when the two schemas' relations or functions differ in number.
    static func resetStatement(_ schema: String, to template: String) -> String {
        """
        DO $reset$
        DECLARE
            r record;
        BEGIN
            IF (SELECT count(*) FROM pg_class WHERE relnamespace = '\(schema)'::regnamespace)
                    <> (SELECT count(*) FROM pg_class WHERE relnamespace = '\(template)'::regnamespace)
                OR (SELECT count(*) FROM pg_proc WHERE pronamespace = '\(schema)'::regnamespace)
                    <> (SELECT count(*) FROM pg_proc WHERE pronamespace = '\(template)'::regnamespace)
            THEN
                RAISE EXCEPTION 'schema \(schema) differs from the template';
            END IF;
            FOR r IN SELECT relname FROM pg_class WHERE relnamespace = '\(template)'::regnamespace AND relkind = 'r'
            LOOP
                EXECUTE format('DELETE FROM \(schema).%I', r.relname);
            END LOOP;
            FOR r IN SELECT relname FROM pg_class WHERE relnamespace = '\(template)'::regnamespace AND relkind = 'r'
            LOOP
                EXECUTE format('INSERT INTO \(schema).%1$I SELECT * FROM \(template).%1$I', r.relname);
            END LOOP;
            FOR r IN SELECT relname FROM pg_class WHERE relnamespace = '\(template)'::regnamespace AND relkind = 'S'
            LOOP
                EXECUTE format(
                    'SELECT setval(%L, last_value, is_called) FROM \(template).%I', '\(schema).' || r.relname,
                    r.relname);
            END LOOP;
        END
        $reset$
        """
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

extension CleanupStore {
    /// One housekeeping pass over every scope, under a lease of its own (tests of what it prunes).
    func housekeepOnce(logger: Logger) async throws {
        let lease = try await acquire(CleanupLeaseRequest(holder: "test", ttlSeconds: 60), logger: logger).lease
        _ = try await housekeeping(
            HousekeepingRequest(
                lease: lease, ttlSeconds: 60, refreshIdleSeconds: 60, sessionRetentionSeconds: 60,
                codeRetentionSeconds: 60, mailRetentionSeconds: 60, batchSize: 100), logger: logger)
    }
}
