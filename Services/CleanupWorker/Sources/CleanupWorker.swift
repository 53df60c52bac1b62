import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import TesseraShared

public struct CleanupWorkerConfiguration: Sendable {
    public var hostname: String = "127.0.0.1"
    public var port: Int = 8083
    /// Hummingbird's own request metrics (`TESSERA_HTTP_LIBRARY_METRICS`; ServiceMetrics.addLibraryRequestMetrics).
    public var libraryRequestMetrics = false
    public var directoryURL: String = "http://127.0.0.1:8082"
    public var internalSecret: String
    /// Pause between two sweeps of the loop.
    public var interval: Duration = .seconds(60)
    /// Accounts deleted per batch (one internal call, one statement each).
    public var batchSize = 500
    /// Pause after each batch, to spread the load of a large sweep: `batchPause`, plus
    /// `batchPauseFactor` times as long as the batch took. The second part makes a sweep back off by
    /// itself when the database or the machine is busy (a batch takes longer, so the pause does),
    /// and keeps the sweep's share of the time at most 1 / (1 + factor).
    public var batchPause: Duration = .zero
    public var batchPauseFactor = 1.25
    /// The sweep lease lasts this long and every batch renews it; a worker that dies mid-sweep
    /// blocks others at most this long.
    public var leaseTTL: Duration = .seconds(60)
    /// The token service's idle lifetime of a session (the same key); longer-idle sessions are ended.
    public var refreshIdleTTL: Duration = .seconds(30 * 86400)
    /// How long ended sessions, used or expired codes and delivered mail are kept before pruning.
    public var sessionRetention: Duration = .seconds(7 * 86400)
    public var codeRetention: Duration = .seconds(86400)
    public var mailRetention: Duration = .seconds(7 * 86400)
    /// Who holds the lease: host, process and a random suffix.
    public var holder =
        "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)/"
        + Secrets.randomAlphanumeric(6)

    public init(internalSecret: String) {
        self.internalSecret = internalSecret
    }

    /// The pause after a batch that took `batch`.
    func pause(after batch: Duration) -> Duration {
        batchPause + batch * batchPauseFactor
    }

    /// Reads the keys documented in docs/configuration.md.
    public init(environment env: ConfigReader) throws {
        self.init(internalSecret: try env.secret("TESSERA_INTERNAL_SECRET"))
        hostname = env.string("TESSERA_HTTP_HOST", default: hostname)
        port = try env.int("TESSERA_HTTP_PORT", default: port)
        libraryRequestMetrics = try env.bool("TESSERA_HTTP_LIBRARY_METRICS", default: false)
        directoryURL = env.string("TESSERA_DIRECTORY_URL", default: directoryURL)
        interval = try env.duration("CLEANUP_INTERVAL", default: interval)
        batchSize = try env.int("CLEANUP_BATCH_SIZE", default: batchSize)
        guard (1...10_000).contains(batchSize) else {
            throw ConfigError.invalid("CLEANUP_BATCH_SIZE", "must be 1...10000")
        }
        batchPause = try env.duration("CLEANUP_BATCH_PAUSE", default: batchPause)
        batchPauseFactor = try env.double("CLEANUP_BATCH_PAUSE_FACTOR", default: batchPauseFactor)
        guard (0...100).contains(batchPauseFactor) else {
            throw ConfigError.invalid("CLEANUP_BATCH_PAUSE_FACTOR", "must be 0...100")
        }
        leaseTTL = try env.duration("CLEANUP_LEASE_TTL", default: leaseTTL)
        refreshIdleTTL = try env.duration("TESSERA_REFRESH_IDLE_TTL", default: refreshIdleTTL)
        sessionRetention = try env.duration("CLEANUP_SESSION_RETENTION", default: sessionRetention)
        codeRetention = try env.duration("CLEANUP_CODE_RETENTION", default: codeRetention)
        mailRetention = try env.duration("CLEANUP_MAIL_RETENTION", default: mailRetention)
    }
}

/// What one sweep did.
public struct SweepReport: Codable, Sendable {
    /// Another worker held the lease: this one did nothing.
    public var skipped = false
    public var sweepId: Int64?
    public var deleted = 0
    /// Deletions per scope ("" is the default scope); scopes without deletions are absent.
    public var deletedByTenant: [String: Int] = [:]
    public var housekeeping = HousekeepingResponse()
    public var seconds = 0.0
}

/// The worker's Prometheus metrics (`GET /metrics`), beside the HTTP ones every service has.
public struct WorkerMetrics: Sendable {
    public let service = ServiceMetrics()
    let completed: Counter
    let skipped: Counter
    let failed: Counter
    /// A sweep that lost its lease mid-way (it ran longer than CLEANUP_LEASE_TTL between two
    /// batches, or another worker took an expired lease over); counted apart from `failed`.
    let leaseLost: Counter
    let deleted: Counter
    let pruned: [String: Counter]
    let lastSweep: Gauge
    let lastDuration: Gauge

    public init() {
        let help = "Sweeps by outcome."
        completed = service.counter("cleanup_sweeps", labels: [("outcome", "completed")], help: help)
        skipped = service.counter("cleanup_sweeps", labels: [("outcome", "skipped")], help: help)
        failed = service.counter("cleanup_sweeps", labels: [("outcome", "failed")], help: help)
        leaseLost = service.counter("cleanup_sweeps", labels: [("outcome", "lease_lost")], help: help)
        deleted = service.counter("cleanup_anonymous_deleted", help: "Anonymous accounts deleted by sweeps.")
        var pruned: [String: Counter] = [:]
        for kind in ["sessions", "codes", "mails"] {
            pruned[kind] = service.counter(
                "cleanup_pruned", labels: [("kind", kind)],
                help: "Ended sessions, used or expired codes and delivered mail pruned.")
        }
        self.pruned = pruned
        lastSweep = service.gauge(
            "cleanup_last_sweep_timestamp", unit: "seconds", help: "When the last completed sweep ended.")
        lastDuration = service.gauge(
            "cleanup_last_sweep_duration", unit: "seconds", help: "How long the last completed sweep took.")
    }

    func record(_ report: SweepReport) {
        if report.skipped {
            skipped.increment()
            return
        }
        completed.increment()
        deleted.increment(by: Int64(report.deleted))
        pruned["sessions"]?.increment(by: Int64(report.housekeeping.sessions))
        pruned["codes"]?.increment(by: Int64(report.housekeeping.codes))
        pruned["mails"]?.increment(by: Int64(report.housekeeping.mails))
        lastSweep.set(Date().timeIntervalSince1970)
        lastDuration.set(report.seconds)
    }
}

/// One sweep (docs/protocol/admin.md#anonymous-cleanup): take the lease, walk the scopes with due anonymous
/// accounts and delete them batch by batch (each one call, one statement: what is due and still anonymous
/// goes), prune, finish. Every batch is its own transaction, so a worker killed mid-sweep loses nothing: the
/// next sweep finds what is left.
public struct Sweeper: Sendable {
    let directory: DirectoryClient
    let configuration: CleanupWorkerConfiguration
    let metrics: WorkerMetrics

    public init(directory: DirectoryClient, configuration: CleanupWorkerConfiguration, metrics: WorkerMetrics) {
        self.directory = directory
        self.configuration = configuration
        self.metrics = metrics
    }

    public func sweep(logger: Logger) async throws -> SweepReport {
        do {
            let report = try await run(logger: logger)
            metrics.record(report)
            return report
        } catch let error as FirebaseError where error.leaseConflict == .lost {
            metrics.leaseLost.increment()
            throw error
        } catch {
            metrics.failed.increment()
            throw error
        }
    }

    func run(logger: Logger) async throws -> SweepReport {
        let started = ContinuousClock.now
        let requestID = Secrets.randomAlphanumeric(20)
        var logger = logger
        logger[metadataKey: "request.id"] = .string(requestID)
        var report = SweepReport()
        let ttl = configuration.leaseTTL.timeInterval
        let granted: CleanupLeaseResponse
        do {
            granted = try await directory.call(
                InternalEndpoints.cleanupLease, CleanupLeaseRequest(holder: configuration.holder, ttlSeconds: ttl),
                requestID: requestID, logger: logger)
        } catch let error as FirebaseError where error.leaseConflict == .held {
            logger.info("sweep skipped: another worker holds the lease")
            report.skipped = true
            return report
        }
        let lease = granted.lease
        report.sweepId = lease.token
        logger[metadataKey: "sweep.id"] = "\(lease.token)"
        for tenant in granted.tenants {
            var deletedHere = 0
            while true {
                let batchStarted = ContinuousClock.now
                let answer = try await directory.call(
                    InternalEndpoints.cleanupDeleteDue,
                    CleanupDeleteDueRequest(
                        lease: lease, ttlSeconds: ttl, scope: tenant, limit: configuration.batchSize),
                    requestID: requestID, logger: logger)
                deletedHere += answer.deleted
                report.deleted += answer.deleted
                let pause = configuration.pause(after: ContinuousClock.now - batchStarted)
                if pause > .zero { try await Task.sleep(for: pause) }
                // A batch of which nothing went was upgraded under the sweep's feet, all of it: leave
                // the rest to the next sweep rather than spin.
                if !answer.more || answer.deleted == 0 { break }
            }
            if deletedHere > 0 {
                report.deletedByTenant[tenant.key] = deletedHere
                logger.info(
                    "anonymous accounts deleted",
                    metadata: ["tenant.id": .string(tenant.key), "cleanup.deleted": "\(deletedHere)"])
            }
        }
        // Housekeeping walks every tenant; each call works for a bounded time and says where to resume.
        var resumeAfter: Scope?
        repeat {
            let part = try await directory.call(
                InternalEndpoints.cleanupHousekeeping,
                HousekeepingRequest(
                    lease: lease, ttlSeconds: ttl, refreshIdleSeconds: configuration.refreshIdleTTL.timeInterval,
                    sessionRetentionSeconds: configuration.sessionRetention.timeInterval,
                    codeRetentionSeconds: configuration.codeRetention.timeInterval,
                    mailRetentionSeconds: configuration.mailRetention.timeInterval, batchSize: configuration.batchSize,
                    after: resumeAfter),
                requestID: requestID, logger: logger)
            report.housekeeping.sessions += part.sessions
            report.housekeeping.codes += part.codes
            report.housekeeping.mails += part.mails
            resumeAfter = part.resumeAfter
        } while resumeAfter != nil
        _ = try await directory.call(
            InternalEndpoints.cleanupFinish, CleanupFinishRequest(lease: lease, deleted: report.deleted),
            requestID: requestID, logger: logger)
        let elapsed = ContinuousClock.now - started
        report.seconds = elapsed.timeInterval
        logger.info(
            "sweep finished",
            metadata: [
                "cleanup.deleted": "\(report.deleted)", "cleanup.tenants": "\(report.deletedByTenant.count)",
                "pruned.sessions": "\(report.housekeeping.sessions)", "pruned.codes": "\(report.housekeeping.codes)",
                "pruned.mails": "\(report.housekeeping.mails)",
                "sweep.seconds": .string(String(format: "%.3f", report.seconds)),
            ])
        return report
    }
}

/// The long-running loop: a sweep every interval until graceful shutdown. A failed sweep is logged
/// and retried at the next tick; the loop never dies of it.
struct SweepLoop: Service {
    let sweeper: Sweeper
    let interval: Duration
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    do {
                        _ = try await sweeper.sweep(logger: logger)
                    } catch {
                        logger.warning("sweep failed", metadata: ["error": "\(error)"])
                    }
                    try await Task.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            return
        }
    }
}

/// Builds the worker: its loop and a small HTTP server for health checks.
public func buildCleanupWorker(
    configuration: CleanupWorkerConfiguration, logger: Logger
) -> some ApplicationProtocol {
    let httpClient = InternalHTTPClient.make()
    let metrics = WorkerMetrics()
    metrics.service.collectLibraryMetrics()
    let directory = DirectoryClient(
        httpClient: httpClient, baseURL: configuration.directoryURL, secret: configuration.internalSecret,
        metrics: metrics.service)
    let sweeper = Sweeper(directory: directory, configuration: configuration, metrics: metrics)
    let router = Router(context: TesseraRequestContext.self)
    router.addTracingMiddleware()
    metrics.service.addLibraryRequestMetrics(to: router, if: configuration.libraryRequestMetrics)
    router.add(middleware: FirebaseErrorMiddleware<TesseraRequestContext>(metrics: metrics.service))
    router.get("/healthz") { _, _ in JSONResponse(HealthStatus()) }
    metrics.service.addRoute(to: router)
    router.get("/readyz") { _, context in
        _ = try await directory.get(
            InternalEndpoints.status, requestID: context.requestID, logger: context.logger)
        return JSONResponse(HealthStatus())
    }
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.hostname, port: configuration.port), serverName: nil),
        services: [
            HTTPClientService(client: httpClient, logger: logger),
            SweepLoop(sweeper: sweeper, interval: configuration.interval, logger: logger),
        ],
        logger: logger)
}

/// `run-once`: one sweep, then exit (non-zero when the sweep failed).
public func runOnce(configuration: CleanupWorkerConfiguration, logger: Logger) async throws -> SweepReport {
    let httpClient = InternalHTTPClient.make()
    let directory = DirectoryClient(
        httpClient: httpClient, baseURL: configuration.directoryURL, secret: configuration.internalSecret)
    do {
        let status = try await Sweeper(directory: directory, configuration: configuration, metrics: WorkerMetrics())
            .sweep(logger: logger)
        try await httpClient.shutdown()
        return status
    } catch {
        try? await httpClient.shutdown()
        throw error
    }
}
