import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import UserDirectory

/// A `COMMIT` whose connection is lost before its answer (issue 37, docs/design-notes.md "A COMMIT
/// whose answer was lost"), on a real PostgreSQL: the connection really closes, and the server's own
/// `txid_status` says what happened.
@Suite("a COMMIT whose answer was lost", .enabled(if: PostgresSupport.available))
struct CommitOutcomePostgresTests {
    let logger = Logger(label: "commit-outcome-test")

    /// Runs one transaction that inserts `value` into `t`, with `commit` in place of the plain COMMIT.
    func insert(_ value: Int, _ database: Database, commit: @escaping Database.CommitStep) async throws -> Int {
        database.commitStep.withLock { $0 = commit }
        defer { database.commitStep.withLock { $0 = nil } }
        return try await database.transaction(logger: logger) { connection in
            try await connection.query("INSERT INTO t VALUES (\(value))", logger: logger)
            return value
        }
    }

    func rows(_ database: Database) async throws -> [Int] {
        var values: [Int] = []
        for try await value in try await database.query("SELECT x FROM t ORDER BY x", logger: logger).decode(Int.self) {
            values.append(value)
        }
        return values
    }

    /// Ends `connection`'s session as a server that goes away does: the session terminates itself,
    /// and the statement fails with the server's `57P01` ("terminating connection due to
    /// administrator command"), an outage. (It ends its own session rather than another session
    /// ending it: a statement sent on a connection that has already closed is never answered in
    /// PostgresNIO 1.33.2; docs/design-notes.md, "A COMMIT whose answer was lost".)
    func endSession(_ connection: PostgresConnection) async throws {
        // The sleep is where the session notices its termination; the error comes with the rows.
        let rows = try await connection.query(
            "SELECT pg_terminate_backend(pg_backend_pid()), pg_sleep(5)", logger: logger)
        for try await _ in rows {}
    }

    @Test("the COMMIT happened and its answer was lost: the caller gets its result, not an error")
    func committedAnswerLost() async throws {
        try await PostgresSupport.withDatabase(migrate: false) { database in
            try await database.query("CREATE TABLE t (x int)", logger: logger)
            let result = try await insert(1, database) { connection, logger in
                try await connection.query("COMMIT;", logger: logger)
                // The answer arrived; as far as the caller can tell, it did not: the session ends
                // with an outage error, as the COMMIT would have failed.
                try await endSession(connection)
            }
            #expect(result == 1)
            #expect(try await rows(database) == [1])
        }
    }

    @Test("the session ended before its COMMIT: the outage is thrown, and nothing was written")
    func lostBeforeCommit() async throws {
        try await PostgresSupport.withDatabase(migrate: false) { database in
            try await database.query("CREATE TABLE t (x int)", logger: logger)
            do {
                _ = try await insert(2, database) { connection, logger in
                    try await endSession(connection)
                    try await connection.query("COMMIT;", logger: logger)
                }
                Issue.record("a transaction that never committed was answered as a success")
            } catch let error as PSQLError {
                #expect(error.isOutage, "\(String(reflecting: error))")
            }
            #expect(try await rows(database).isEmpty)
        }
    }

    @Test("txid_status of an id the server never assigned says not committed")
    func futureTransactionID() async throws {
        try await PostgresSupport.withDatabase(migrate: false) { database in
            var current: Int64 = 0
            for try await value in try await database.query("SELECT txid_current()", logger: logger).decode(Int64.self)
            {
                current = value
            }
            let outcome = await database.commitOutcome(current + 1_000_000, lost: database.client, logger: logger)
            #expect(outcome == .notCommitted)
        }
    }

    @Test("a wait that a statement ignoring cancellation cannot hold past its limit")
    func abandoningDeadline() async throws {
        let release = AsyncStream<Void>.makeStream()
        let started = ContinuousClock.now
        await #expect(throws: DeadlineExceeded.self) {
            try await abandoningAfter(.milliseconds(200)) {
                // As a statement on a closed connection: no answer, cancellation or not.
                for await _ in release.stream { break }
                return 1
            }
        }
        #expect(ContinuousClock.now - started < .seconds(3))
        release.continuation.finish()
        #expect(try await abandoningAfter(.seconds(5)) { 2 } == 2)
    }
}
