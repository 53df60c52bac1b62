import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Prometheus
import ServiceLifecycle
import Synchronization
import TesseraShared

/// An operation failed because its connection pool was closed under it (a failover moved the
/// directory to a new pool, or the service is stopping): a dependency outage, answered 503.
public struct DatabaseUnavailable: Error, CustomStringConvertible {
    public let cause: String
    public var description: String { "the database connection pool closed: \(cause)" }
}

/// The PostgreSQL the directory reads and writes: a `PostgresClient` pool, and with a multi-host
/// `DATABASE_URL` the one that finds the writable primary among the listed servers and moves to the
/// new one after a failover (issue 26).
///
/// With one server this is the pool and nothing else. With several:
/// - At start, and whenever an operation fails in a way a failover explains (the connection lost,
///   the server shutting down or starting, `25006 read_only_sql_transaction` from a demoted
///   primary), it probes the servers in their listed order with a connection of its own, as libpq's
///   `target_session_attrs=read-write` does (`SHOW transaction_read_only`), until one is writable.
///   It then starts a new pool for that server, sends every new operation there and closes the old
///   pool. A fresh pool is started even when the primary is the same server again (it restarted):
///   the old one may be backing off its reconnection attempts.
/// - Every `primaryCheckInterval` it probes the server it uses, so a primary that was demoted
///   without dropping connections is noticed without waiting for a failed write.
/// - Meanwhile operations fail as before, and the handlers answer `503` with `Retry-After`
///   (`DatabaseErrorMiddleware`).
public final class Database: Service, Sendable {
    let target: DatabaseTarget
    let logger: Logger
    private let state: Mutex<State>
    /// The pool, when `DATABASE_URL` names one server.
    private let fixed: PostgresClient?
    /// Set by an operation that failed as a failover makes operations fail; read by `watch()`.
    private let suspected = Atomic<Bool>(false)
    /// How many times operations moved to a new pool (tests).
    let switchCount = Atomic<Int>(0)
    private static let quiet = Logger(label: "tessera.database.probe", factory: { _ in SwiftLogNoOpLogHandler() })
    let instruments: PoolInstruments?

    private struct State {
        var client: PostgresClient
        var endpoint: DatabaseEndpoint
        /// The task running `client.run()` (multi-host only; a single pool runs in `run()` itself).
        var runner: Task<Void, Never>?
        var primaryKnown: Bool
    }

    public init(target: DatabaseTarget, logger: Logger, metrics: ServiceMetrics? = nil) {
        self.target = target
        self.logger = logger
        instruments = metrics.map {
            PoolInstruments(metrics: $0, maximum: target.client(for: target.endpoints[0]).options.maximumConnections)
        }
        let first = target.endpoints[0]
        let client = PostgresClient(configuration: target.client(for: first), backgroundLogger: logger)
        fixed = target.endpoints.count == 1 ? client : nil
        state = Mutex(
            State(client: client, endpoint: first, runner: nil, primaryKnown: target.endpoints.count == 1))
    }

    /// A single pool that is already configured (tests).
    public convenience init(client configuration: PostgresClient.Configuration, logger: Logger) {
        self.init(target: DatabaseTarget(single: configuration), logger: logger)
    }

    var isReplicated: Bool { target.endpoints.count > 1 }

    /// The pool operations go to now. With one server it never changes, and refreshes and lookups
    /// read it without the lock.
    public var client: PostgresClient { fixed ?? state.withLock { $0.client } }

    /// The server operations go to now.
    public var endpoint: DatabaseEndpoint { state.withLock { $0.endpoint } }

    // MARK: Operations

    public func query(
        _ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line
    ) async throws -> PostgresRowSequence {
        instruments?.begin()
        defer { instruments?.end() }
        let client = self.client
        do {
            return try await client.query(query, logger: logger, file: file, line: line)
        } catch {
            throw failure(error, of: client)
        }
    }

    public func execute<Statement: PostgresPreparedStatement, Row>(
        _ statement: Statement, logger: Logger, file: String = #fileID, line: Int = #line
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Row> where Row == Statement.Row {
        instruments?.begin()
        defer { instruments?.end() }
        let client = self.client
        do {
            return try await client.execute(statement, logger: logger, file: file, line: line)
        } catch {
            throw failure(error, of: client)
        }
    }

    public func withConnection<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let client = self.client
        let started = ContinuousClock.now
        instruments?.begin()
        defer { instruments?.end() }
        do {
            return try await client.withConnection(isolation: isolation) { connection in
                instruments?.leased(after: ContinuousClock.now - started)
                return try await body(connection)
            }
        } catch {
            throw failure(error, of: client)
        }
    }

    /// A transaction: `BEGIN`, `body`, `COMMIT`, with the step that failed thrown as itself (an error
    /// of `body`, such as a `FirebaseError`, or the `PSQLError` of a statement). The transaction is
    /// rolled back when `body` fails.
    ///
    /// A `COMMIT` whose connection is lost before its answer may or may not have committed: the
    /// primary's host may have gone down just after writing (and, with a synchronous standby,
    /// replicating) the commit. Answering 503 then was a lie when it had: a client told that its
    /// password change failed found its tokens revoked by it (issue 37). So the transaction's id is
    /// read before `COMMIT` (`txid_current()`, which also assigns one to a transaction that wrote
    /// nothing yet), and after a lost `COMMIT` the primary is asked `txid_status` (`commitOutcome`):
    /// committed, and the caller gets its result; anything else, and the error is thrown as before
    /// (a retryable 503). docs/design-notes.md, "A COMMIT whose answer was lost".
    func transaction<Result: Sendable>(
        logger: Logger, isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let client = self.client
        let started = ContinuousClock.now
        let commit = commitStep.withLock { $0 } ?? Self.commit
        instruments?.begin()
        defer { instruments?.end() }
        let outcome: TransactionOutcome<Result>
        do {
            outcome = try await client.withConnection(isolation: isolation) { connection in
                instruments?.leased(after: ContinuousClock.now - started)
                return try await Self.transaction(
                    on: connection, logger: logger, commit: commit, isolation: isolation, body)
            }
        } catch {
            throw failure(error, of: client)
        }
        switch outcome {
        case .committed(let value):
            return value
        case .commitLost(let value, let txid, let error):
            // Thrown unless the primary says it committed; first, with several servers, it asks
            // `watch()` to look for the primary.
            let thrown = failure(error, of: client)
            let found = await commitOutcome(txid, lost: client, logger: logger)
            logger.warning(
                "a COMMIT lost its connection before its answer",
                metadata: [
                    "db.txid": .stringConvertible(txid), "db.commit_outcome": .string(found.rawValue),
                    "error": .string(String(describing: error.code)),
                ])
            guard found == .committed else { throw thrown }
            return value
        }
    }

    /// What a transaction came to: committed, or a `COMMIT` that lost its connection, with the
    /// transaction's id and the result `body` had.
    enum TransactionOutcome<Value: Sendable>: Sendable {
        case committed(Value)
        case commitLost(Value, txid: Int64, error: PSQLError)
    }

    /// Sends `COMMIT` on a connection whose transaction is done.
    typealias CommitStep = @Sendable (PostgresConnection, Logger) async throws -> Void

    static let commit: CommitStep = { connection, logger in try await connection.query("COMMIT;", logger: logger) }

    /// What sends `COMMIT` instead of `commit`: tests put a lost connection between a `COMMIT` and its
    /// answer here, or before the `COMMIT`.
    let commitStep = Mutex<CommitStep?>(nil)

    private static func transaction<Result: Sendable>(
        on connection: PostgresConnection, logger: Logger, commit: CommitStep,
        isolation: isolated (any Actor)?, _ body: (PostgresConnection) async throws -> sending Result
    ) async throws -> TransactionOutcome<Result> {
        do {
            try await connection.query("BEGIN;", logger: logger)
        } catch {
            _ = await settle(connection, after: error)
            throw error
        }
        let value: Result
        let txid: Int64
        do {
            value = try await body(connection)
            txid = try await connection.query("SELECT txid_current()", logger: logger).decodeFirst(Int64.self)
        } catch {
            if await settle(connection, after: error) { throw error }
            _ = try? await connection.query("ROLLBACK;", logger: logger)
            throw error
        }
        do {
            try await commit(connection, logger)
        } catch let error as PSQLError where error.isOutage {
            // Lost, or an answer that does not say (a server shutting down while the commit waited
            // for the synchronous standby has committed it locally): the primary will say.
            _ = await settle(connection, after: error)
            return .commitLost(value, txid: txid, error: error)
        }
        return .committed(value)
    }

    /// After `error`, whether `connection` is closing: then this waits (up to a second) until it has
    /// closed, before the lease goes back to the pool. PostgresNIO 1.33.2 never answers a statement
    /// sent on a connection that has already closed, and a pool that got the connection back before
    /// it saw the close lent it to the next operation, which then waited forever (seen in one run of
    /// five of `CommitOutcomePostgresTests`; docs/design-notes.md, "A COMMIT whose answer was lost").
    private static func settle(_ connection: PostgresConnection, after error: any Error) async -> Bool {
        guard let error = error as? PSQLError, error.closesConnection else { return false }
        // `abandoningAfter`, not `withDeadline`: a future's `get()` does not end when cancelled.
        _ = try? await abandoningAfter(.seconds(1)) { try await connection.closeFuture.get() }
        return true
    }

    /// Whether transaction `txid`, whose `COMMIT` lost its connection from `pool`, committed.
    public enum CommitOutcome: String, Sendable {
        case committed
        case notCommitted = "not committed"
        case unknown
    }

    /// Asks the writable primary, within `commitOutcomeWait`, what became of transaction `txid`
    /// (`txid_status`). With several servers it asks once the pool that lost the `COMMIT` has been
    /// replaced (`watch()` finds the primary, the same one or the standby a failover promoted);
    /// with one it asks the same server, whose pool reconnects when it is back.
    ///
    /// - `committed`: the commit is on the primary in use, whatever the lost answer would have said.
    /// - `aborted`, or "in the future" (the primary has not assigned that id: the promoted standby
    ///   never received any of the transaction): it did not happen here.
    /// - `in progress` (the old backend has not noticed its client is gone yet): asked again.
    /// - No answer within the wait: unknown, answered as an outage (503, retryable).
    ///
    /// One case it cannot tell apart: when none of the transaction's WAL reached a promoted standby,
    /// the new primary may give the same id to a later transaction, and `committed` then speaks of
    /// that one. With a synchronous standby that needs the old primary to die between flushing its
    /// commit and sending it; docs/design-notes.md says more.
    func commitOutcome(_ txid: Int64, lost pool: PostgresClient, logger: Logger) async -> CommitOutcome {
        let deadline = ContinuousClock.now + target.commitOutcomeWait
        while ContinuousClock.now < deadline {
            let client = self.client
            if isReplicated && client === pool {
                try? await Task.sleep(for: .milliseconds(50))
                continue
            }
            do {
                let status = try await abandoningAfter(deadline - ContinuousClock.now) {
                    try await client.query("SELECT txid_status(\(txid))", logger: logger)
                        .decodeFirst(String?.self)
                }
                switch status {
                case "committed": return .committed
                case "aborted": return .notCommitted
                case nil: return .unknown  // too old to say; not seconds after the commit
                default: break
                }
            } catch let error as PSQLError where error.has(.invalidParameterValue) {
                return .notCommitted
            } catch {
                // The server is not back yet, or this pool was retired meanwhile: ask again.
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return .unknown
    }

    /// What an operation of `client` that failed with `error` throws. A PostgreSQL error as it is,
    /// after asking for a probe when a failover explains it and it came from the pool in use (the
    /// operations of a retired pool fail as it closes). An error of the pool itself (PostgresNIO's
    /// `ConnectionPoolError`: shut down while an operation waited for a connection, as a retired
    /// pool is) becomes `DatabaseUnavailable`, a 503, as does any other error of a retired pool's
    /// operation; the handlers' own errors (`FirebaseError`) pass.
    func failure(_ error: any Error, of client: PostgresClient) -> any Error {
        if let error = error as? PSQLError {
            if isReplicated, error.isOutage, client === self.client {
                suspected.store(true, ordering: .relaxed)
            }
            return error
        }
        if error is FirebaseError || error is CancellationError { return error }
        if client !== self.client || String(describing: type(of: error)) == "ConnectionPoolError" {
            return DatabaseUnavailable(cause: String(describing: error))
        }
        return error
    }

    /// Returns once the writable primary has been found (at once with a single server), or throws
    /// `DeadlineExceeded` after `limit`.
    func waitForPrimary(within limit: Duration) async throws {
        try await withDeadline(limit) {
            while !self.state.withLock({ $0.primaryKnown }) { try await Task.sleep(for: .milliseconds(50)) }
        }
    }

    // MARK: The service

    public func run() async throws {
        guard isReplicated else {
            await client.run()
            return
        }
        let first = state.withLock { state in
            let client = state.client
            state.runner = Task { await client.run() }
            return state.endpoint
        }
        logger.info(
            "DATABASE_URL lists several servers: writing to the writable primary among them",
            metadata: [
                "db.servers": .string(target.endpoints.map(\.description).joined(separator: ",")),
                "db.server": .string(first.description),
            ])
        // Until a graceful shutdown (the server has answered its requests by then) or cancellation:
        // the loops below only look at cancellation, and a stopping directory with a replicated
        // DATABASE_URL waited for the shutdown timeout (25 s) instead of stopping at once.
        await cancelWhenGracefulShutdown {
            await self.locate(after: nil)
            await self.watch()
        }
        let runner = state.withLock { $0.runner }
        runner?.cancel()
        await runner?.value
    }

    /// Looks for a failure report every 100 ms and probes the server in use every
    /// `primaryCheckInterval`; moves when the primary moved; until the service is cancelled.
    private func watch() async {
        var checked = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(100))
            let current = endpoint
            let failed = suspected.exchange(false, ordering: .relaxed)
            if failed {
                logger.warning(
                    "an operation failed as a failover would make it fail: looking for the writable primary",
                    metadata: ["db.server": .string(current.description)])
            } else if ContinuousClock.now - checked >= target.primaryCheckInterval {
                checked = ContinuousClock.now
                if (try? await probe(current)) == true { continue }
                logger.warning(
                    "the PostgreSQL server in use is no longer the writable primary: looking for it",
                    metadata: ["db.server": .string(current.description)])
            } else {
                continue
            }
            await locate(after: current, freshPool: failed)
            checked = ContinuousClock.now
        }
    }

    /// Probes the servers in order until one is writable, then sends operations to a new pool for
    /// it. `previous` is the server in use before. After failed operations (`freshPool`) the pool is
    /// new even for the same server, which may have restarted while the old pool backs off; after a
    /// probe of ours that failed (a busy moment) the pool in use is kept if its server still takes
    /// writes, so that its operations in flight are not failed for nothing.
    private func locate(after previous: DatabaseEndpoint?, freshPool: Bool = false) async {
        let started = ContinuousClock.now
        var attempt = 0
        while !Task.isCancelled {
            for endpoint in target.endpoints {
                guard (try? await probe(endpoint)) == true else { continue }
                install(endpoint, replacing: previous, freshPool: freshPool, after: ContinuousClock.now - started)
                return
            }
            attempt += 1
            if attempt == 1 || attempt % 20 == 0 {
                logger.warning(
                    "no writable PostgreSQL primary among the servers of DATABASE_URL yet; retrying",
                    metadata: ["db.servers": .string(target.endpoints.map(\.description).joined(separator: ","))])
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    /// Moves operations to a new pool for `endpoint`, unless the pool in use is for it and no fresh
    /// one is asked for.
    private func install(
        _ endpoint: DatabaseEndpoint, replacing previous: DatabaseEndpoint?, freshPool: Bool, after elapsed: Duration
    ) {
        let retired: Task<Void, Never>? = state.withLock { state in
            defer { state.primaryKnown = true }
            if !freshPool && state.endpoint == endpoint { return nil }
            let client = PostgresClient(configuration: target.client(for: endpoint), backgroundLogger: logger)
            let old = state.runner
            state.client = client
            state.endpoint = endpoint
            state.runner = Task { await client.run() }
            return old
        }
        suspected.store(false, ordering: .relaxed)
        guard let retired else { return }
        switchCount.add(1, ordering: .relaxed)
        logger.notice(
            "writing to the PostgreSQL primary",
            metadata: [
                "db.server": .string(endpoint.description),
                "db.previous": .string(previous?.description ?? "none"),
                "db.located_in_ms": .stringConvertible(Int(elapsed.timeInterval * 1000)),
            ])
        retired.cancel()
    }

    /// Whether `endpoint` answers and takes writes, over a connection of its own (2 s to connect).
    func probe(_ endpoint: DatabaseEndpoint) async throws -> Bool {
        let configuration = try target.connection(for: endpoint, connectTimeout: .seconds(2))
        let connection = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration,
            id: 0, logger: Self.quiet
        ).get()
        do {
            let rows = try await withDeadline(.seconds(2)) {
                try await connection.query("SHOW transaction_read_only", logger: Self.quiet).collect()
            }
            try? await connection.close()
            return try rows.first?.decode(String.self) == "off"
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// The pool's figures (PostgresNIO reports none through swift-metrics): its size, the operations
/// in progress — each holds a connection or waits for one, so more of them than the pool's size
/// means callers queue — and how long an operation that runs several statements (a transaction,
/// `withConnection`) waited for its connection. Counted around every operation of the facade.
final class PoolInstruments: Sendable {
    private let inFlight = Atomic<Int>(0)
    let inUse: Gauge
    let wait: DurationHistogram

    init(metrics: ServiceMetrics, maximum: Int) {
        metrics.gauge(
            "db_pool_connections_max", unit: "",
            help: "The most connections the PostgreSQL pool opens (DATABASE_POOL_MAX)."
        ).set(Double(maximum))
        inUse = metrics.gauge(
            "db_pool_connections_in_use", unit: "",
            help: "PostgreSQL operations in progress: each holds a pool connection or waits for one.")
        wait = metrics.latency(
            "db_pool_wait", help: "Time a transaction or connection lease waited for a pool connection.")
    }

    func begin() { inUse.set(Double(inFlight.add(1, ordering: .relaxed).newValue)) }
    func end() { inUse.set(Double(inFlight.subtract(1, ordering: .relaxed).newValue)) }
    func leased(after waiting: Duration) { wait.record(waiting) }
}

/// `body`'s result, or `DeadlineExceeded` once `limit` has passed, even when `body` does not end when
/// cancelled: it is then cancelled and left to end on its own (`withDeadline` waits for it). For a
/// statement that may have been sent on a closed connection, which PostgresNIO never answers.
func abandoningAfter<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T
{
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let answer = FirstAnswer(continuation)
        let work = Task {
            do { answer.give(.success(try await body())) } catch { answer.give(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: limit)
            work.cancel()
            answer.give(.failure(DeadlineExceeded()))
        }
    }
}

/// Resumes a continuation with the first result it is given; later ones are dropped.
private final class FirstAnswer<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>

    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = Mutex(continuation) }

    func give(_ result: Result<T, any Error>) {
        continuation.withLock { waiting in
            waiting?.resume(with: result)
            waiting = nil
        }
    }
}

/// A statement that was to return a row returned none.
struct MissingRow: Error, CustomStringConvertible {
    var description: String { "the statement returned no row" }
}

extension PostgresRowSequence {
    /// The first row's only column (`SELECT txid_current()`).
    func decodeFirst<Column: PostgresDecodable>(_ type: Column.Type) async throws -> Column {
        for try await value in decode(Column.self) { return value }
        throw MissingRow()
    }
}
