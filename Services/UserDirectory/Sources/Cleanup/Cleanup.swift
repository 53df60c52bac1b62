import Foundation
import Hummingbird
import Logging
import PostgresNIO
import TesseraShared

extension FirebaseError {
    static func leaseConflict(_ code: String, _ detail: String) -> FirebaseError {
        FirebaseError(status: .conflict, message: "\(code) : \(detail)", grpcStatus: "ABORTED", reason: "conflict")
    }
}

/// The directory's side of the anonymous cleanup and housekeeping (API.md A.6): the sweep lease,
/// due accounts, the conditional delete, pruning, and what admins see of it. Every account query
/// filters by scope; the worker walks the scopes.
struct CleanupStore: Sendable {
    let client: PostgresClient
    let anonymousRetention: Duration
    /// How long one housekeeping call may work before it hands back where to resume (the worker's
    /// internal calls time out after TESSERA_INTERNAL_TIMEOUT, 5 s by default).
    var housekeepingBudget: Duration = .seconds(2)
    static let leaseName = "anonymous-cleanup"

    /// Takes the lease when it is free or expired; `LEASE_HELD` otherwise.
    func acquire(_ request: CleanupLeaseRequest, logger: Logger) async throws -> CleanupLeaseResponse {
        let token: Int64? = try await client.transaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE cleanup_lease SET holder = \(request.holder), token = token + 1,
                    expires_at = now() + make_interval(secs => \(request.ttlSeconds))
                WHERE name = \(Self.leaseName) AND (holder IS NULL OR expires_at < now())
                RETURNING token
                """, logger: logger)
            var token: Int64?
            for try await value in rows.decode(Int64.self) { token = value }
            guard let token else { return nil }
            try await connection.query(
                "INSERT INTO cleanup_sweeps (sweep_id, holder) VALUES (\(token), \(request.holder))", logger: logger)
            return token
        }
        guard let token else {
            throw FirebaseError.leaseConflict("LEASE_HELD", "another worker is sweeping")
        }
        let rows = try await client.query(
            """
            SELECT t.tenant_id FROM tenants t
            WHERE EXISTS (SELECT 1 FROM users u WHERE u.tenant_id = t.tenant_id AND u.is_anonymous
                AND u.anonymous_due_at <= now())
            ORDER BY t.tenant_id
            """, logger: logger)
        var tenants: [String] = []
        for try await tenant in rows.decode(String.self) { tenants.append(tenant) }
        return CleanupLeaseResponse(lease: CleanupLease(holder: request.holder, token: token), tenants: tenants)
    }

    /// Checks (and with `extend`, renews) the lease inside the caller's transaction.
    static func checkLease(
        _ connection: PostgresConnection, _ lease: CleanupLease, extend ttlSeconds: Double?, logger: Logger
    ) async throws {
        let rows: PostgresRowSequence
        if let ttlSeconds {
            rows = try await connection.query(
                """
                UPDATE cleanup_lease SET expires_at = now() + make_interval(secs => \(ttlSeconds))
                WHERE name = \(leaseName) AND holder = \(lease.holder) AND token = \(lease.token) AND expires_at > now()
                RETURNING token
                """, logger: logger)
        } else {
            rows = try await connection.query(
                """
                SELECT token FROM cleanup_lease
                WHERE name = \(leaseName) AND holder = \(lease.holder) AND token = \(lease.token) AND expires_at > now()
                FOR SHARE
                """, logger: logger)
        }
        for try await _ in rows.decode(Int64.self) { return }
        throw FirebaseError.leaseConflict("LEASE_LOST", "the sweep lease expired or was taken over")
    }

    func due(_ request: CleanupDueRequest, logger: Logger) async throws -> CleanupDueResponse {
        try await client.transaction(logger: logger) { connection in
            try await Self.checkLease(connection, request.lease, extend: request.ttlSeconds, logger: logger)
            let rows = try await connection.query(
                """
                SELECT local_id FROM users
                WHERE tenant_id = \(request.tenantId) AND is_anonymous AND anonymous_due_at <= now()
                ORDER BY anonymous_due_at, local_id LIMIT \(max(1, min(request.limit, 10_000)))
                """, logger: logger)
            var ids: [String] = []
            for try await id in rows.decode(String.self) { ids.append(id) }
            return CleanupDueResponse(localIds: ids)
        }
    }

    /// The conditional delete: only accounts still anonymous and still due go, so one upgraded
    /// since it was listed stays. Their sessions end in the same transaction, the scope's counters
    /// grow and the audit log records the batch.
    func delete(_ request: CleanupDeleteRequest, requestID: String, logger: Logger) async throws
        -> CleanupDeleteResponse
    {
        guard !request.localIds.isEmpty else { return CleanupDeleteResponse(deleted: 0) }
        return try await client.transaction(logger: logger) { connection in
            try await Self.checkLease(connection, request.lease, extend: nil, logger: logger)
            let scope = request.tenantId
            let rows = try await connection.query(
                """
                DELETE FROM users
                WHERE tenant_id = \(scope) AND local_id = ANY(\(request.localIds)) AND is_anonymous
                    AND anonymous_due_at <= now()
                RETURNING local_id
                """, logger: logger)
            var deleted: [String] = []
            for try await id in rows.decode(String.self) { deleted.append(id) }
            guard !deleted.isEmpty else { return CleanupDeleteResponse(deleted: 0) }
            try await connection.query(
                """
                UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'user_deleted'
                WHERE tenant_id = \(scope) AND local_id = ANY(\(deleted)) AND revoked_at IS NULL
                """, logger: logger)
            let count = Int64(deleted.count)
            try await connection.query(
                """
                INSERT INTO cleanup_stats (tenant_id, last_sweep_id, last_sweep_at, last_sweep_deleted, total_deleted)
                VALUES (\(scope), \(request.lease.token), now(), \(count), \(count))
                ON CONFLICT (tenant_id) DO UPDATE SET
                    last_sweep_deleted = CASE WHEN cleanup_stats.last_sweep_id = EXCLUDED.last_sweep_id
                        THEN cleanup_stats.last_sweep_deleted + EXCLUDED.last_sweep_deleted
                        ELSE EXCLUDED.last_sweep_deleted END,
                    last_sweep_id = EXCLUDED.last_sweep_id, last_sweep_at = now(),
                    total_deleted = cleanup_stats.total_deleted + EXCLUDED.total_deleted
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO audit_log (tenant_id, actor, action, target, request_id)
                VALUES (\(scope), 'system:cleanup', 'anonymousCleanup.delete', \("users:\(count)"), \(requestID))
                """, logger: logger)
            return CleanupDeleteResponse(deleted: deleted.count)
        }
    }

    /// Prunes, scope by scope and in bounded batches: sessions revoked, absolutely expired or idle
    /// for longer than the retention; codes used or expired; delivered mail.
    func housekeeping(_ request: HousekeepingRequest, logger: Logger) async throws -> HousekeepingResponse {
        var result = HousekeepingResponse()
        let limit = max(1, min(request.batchSize, 10_000))
        let after = request.after ?? ""
        let scopes = try await client.query(
            "SELECT tenant_id FROM tenants WHERE tenant_id > \(after) ORDER BY tenant_id", logger: logger)
        var tenants: [String] = []
        for try await tenant in scopes.decode(String.self) { tenants.append(tenant) }
        let deadline = ContinuousClock.now + housekeepingBudget
        var finished: String?
        for tenant in tenants {
            // Stop between tenants once the budget is spent; the worker calls again from here.
            if ContinuousClock.now > deadline, let finished {
                result.resumeAfter = finished
                return result
            }
            defer { finished = tenant }
            while true {
                let counts = try await client.transaction(logger: logger) { connection in
                    try await Self.checkLease(connection, request.lease, extend: request.ttlSeconds, logger: logger)
                    return try await Self.prune(
                        connection, tenant: tenant, request: request, limit: limit, logger: logger)
                }
                result.sessions += counts.sessions
                result.codes += counts.codes
                result.mails += counts.mails
                if max(counts.sessions, counts.codes, counts.mails) < limit { break }
            }
        }
        return result
    }

    static func prune(
        _ connection: PostgresConnection, tenant: String, request: HousekeepingRequest, limit: Int, logger: Logger
    ) async throws -> HousekeepingResponse {
        func count(_ rows: PostgresRowSequence) async throws -> Int {
            var n = 0
            for try await _ in rows.decode(Int.self) { n += 1 }
            return n
        }
        let sessionRetention = request.sessionRetentionSeconds
        let sessions = try await count(
            connection.query(
                """
                DELETE FROM refresh_families WHERE tenant_id = \(tenant) AND family_id IN (
                    SELECT family_id FROM refresh_families WHERE tenant_id = \(tenant) AND (
                        revoked_at < now() - make_interval(secs => \(sessionRetention))
                        OR expires_at < now() - make_interval(secs => \(sessionRetention))
                        OR last_used_at < now() - make_interval(secs => \(request.refreshIdleSeconds + sessionRetention)))
                    LIMIT \(limit))
                RETURNING 1
                """, logger: logger))
        let codes = try await count(
            connection.query(
                """
                DELETE FROM oob_codes WHERE tenant_id = \(tenant) AND code_hash IN (
                    SELECT code_hash FROM oob_codes WHERE tenant_id = \(tenant) AND (
                        used_at < now() - make_interval(secs => \(request.codeRetentionSeconds))
                        OR expires_at < now() - make_interval(secs => \(request.codeRetentionSeconds)))
                    LIMIT \(limit))
                RETURNING 1
                """, logger: logger))
        let mails = try await count(
            connection.query(
                """
                DELETE FROM mail_outbox WHERE tenant_id = \(tenant) AND id IN (
                    SELECT id FROM mail_outbox WHERE tenant_id = \(tenant)
                        AND delivered_at < now() - make_interval(secs => \(request.mailRetentionSeconds))
                    LIMIT \(limit))
                RETURNING 1
                """, logger: logger))
        // Rate-limit windows are an hour long; a day later nobody needs them.
        try await connection.query(
            """
            DELETE FROM rate_counters WHERE (tenant_id, bucket, key, window_start) IN (
                SELECT tenant_id, bucket, key, window_start FROM rate_counters
                WHERE tenant_id = \(tenant) AND window_start < now() - interval '1 day' LIMIT \(limit))
            """, logger: logger)
        return HousekeepingResponse(sessions: sessions, codes: codes, mails: mails)
    }

    /// Records the sweep as finished and frees the lease.
    func finish(_ request: CleanupFinishRequest, logger: Logger) async throws {
        try await client.transaction(logger: logger) { connection in
            try await Self.checkLease(connection, request.lease, extend: nil, logger: logger)
            try await connection.query(
                """
                UPDATE cleanup_sweeps SET finished_at = now(), deleted = \(Int64(request.deleted))
                WHERE sweep_id = \(request.lease.token)
                """, logger: logger)
            try await connection.query(
                """
                UPDATE cleanup_lease SET holder = NULL, expires_at = NULL
                WHERE name = \(Self.leaseName) AND token = \(request.lease.token)
                """, logger: logger)
        }
    }

    // MARK: What admins see (A.10)

    struct Bucket: Encodable, Sendable {
        var dueBefore: String
        var count: Int64
    }

    struct Preview: Encodable, Sendable {
        var anonymousUsers: Int64
        var alreadyScheduled: Int64
        var firstDueTime: String?
        var buckets: [Bucket]
    }

    /// What turning auto-cleanup on now would do: accounts already scheduled keep their time, the
    /// others fall due at now + retention. Changes nothing.
    func preview(scope: String, bucketSeconds: Int, logger: Logger) async throws -> Preview {
        let retention = anonymousRetention.timeInterval
        return try await client.withConnection { connection in
            let totals = try await connection.query(
                """
                SELECT count(*), count(anonymous_due_at),
                    min(coalesce(anonymous_due_at, now() + make_interval(secs => \(retention))))
                FROM users WHERE tenant_id = \(scope) AND is_anonymous
                """, logger: logger)
            var preview = Preview(anonymousUsers: 0, alreadyScheduled: 0, firstDueTime: nil, buckets: [])
            for try await (all, scheduled, first) in totals.decode((Int64, Int64, Date?).self) {
                preview.anonymousUsers = all
                preview.alreadyScheduled = scheduled
                preview.firstDueTime = first.map(RFC3339.seconds)
            }
            let buckets = try await connection.query(
                """
                SELECT to_timestamp((floor(extract(epoch FROM due) / \(bucketSeconds)) + 1) * \(bucketSeconds)), count(*)
                FROM (SELECT coalesce(anonymous_due_at, now() + make_interval(secs => \(retention))) AS due
                      FROM users WHERE tenant_id = \(scope) AND is_anonymous) d
                GROUP BY 1 ORDER BY 1
                """, logger: logger)
            for try await (end, count) in buckets.decode((Date, Int64).self) {
                preview.buckets.append(Bucket(dueBefore: RFC3339.seconds(end), count: count))
            }
            return preview
        }
    }

    struct Status: Encodable, Sendable {
        var enabled: Bool
        var retention: String
        var lastSweepTime: String?
        var lastSweepDeleted: Int64
        var totalDeleted: Int64
        var scheduled: Int64
    }

    func status(scope: String, logger: Logger) async throws -> Status {
        try await client.withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT t.autodelete_anonymous_users, s.finished_at, s.sweep_id,
                    st.last_sweep_id, coalesce(st.last_sweep_deleted, 0), coalesce(st.total_deleted, 0),
                    (SELECT count(*) FROM users u WHERE u.tenant_id = t.tenant_id AND u.is_anonymous
                        AND u.anonymous_due_at IS NOT NULL)
                FROM tenants t
                LEFT JOIN cleanup_stats st ON st.tenant_id = t.tenant_id
                LEFT JOIN LATERAL (SELECT sweep_id, finished_at FROM cleanup_sweeps WHERE finished_at IS NOT NULL
                    ORDER BY sweep_id DESC LIMIT 1) s ON true
                WHERE t.tenant_id = \(scope)
                """, logger: logger)
            for try await row in rows.decode((Bool, Date?, Int64?, Int64?, Int64, Int64, Int64).self) {
                let lastDeleted = row.2 != nil && row.2 == row.3 ? row.4 : 0
                return Status(
                    enabled: row.0, retention: "\(Int64(anonymousRetention.timeInterval))s",
                    lastSweepTime: row.1.map(RFC3339.seconds), lastSweepDeleted: lastDeleted, totalDeleted: row.5,
                    scheduled: row.6)
            }
            throw FirebaseError.invalid("TENANT_NOT_FOUND")
        }
    }
}

/// `…/anonymousCleanup` and `…/anonymousCleanup:preview` (A.10).
struct CleanupController<Tenants: TenantRepository> {
    let store: CleanupStore
    let tenants: Tenants

    func addRoutes(to group: RouterGroup<DirectoryContext>) {
        for scope in ["v2/projects/{project}", "v2/projects/{project}/tenants/{tenant}"] {
            group.get("\(scope)/anonymousCleanup") { _, context in
                JSONResponse(
                    try await store.status(scope: try await tenants.scope(of: context), logger: context.logger))
            }
            group.get("\(scope)/anonymousCleanup:preview") { request, context in
                let bucket = request.uri.queryParameters.get("bucket") ?? "day"
                guard let seconds = ["hour": 3600, "day": 86400][String(bucket)] else {
                    throw FirebaseError.invalidArgument("bucket must be hour or day")
                }
                return JSONResponse(
                    try await store.preview(
                        scope: try await tenants.scope(of: context), bucketSeconds: seconds, logger: context.logger))
            }
        }
    }
}

/// The worker's internal endpoints.
struct CleanupInternalController {
    let store: CleanupStore

    func addRoutes(to group: RouterGroup<DirectoryContext>) {
        group.post(RouterPath(InternalPath.cleanupLease)) { request, context in
            let body = try await request.decodeJSON(CleanupLeaseRequest.self, context: context)
            return JSONResponse(try await store.acquire(body, logger: context.logger))
        }
        group.post(RouterPath(InternalPath.cleanupDue)) { request, context in
            let body = try await request.decodeJSON(CleanupDueRequest.self, context: context)
            return JSONResponse(try await store.due(body, logger: context.logger))
        }
        group.post(RouterPath(InternalPath.cleanupDelete)) { request, context in
            let body = try await request.decodeJSON(CleanupDeleteRequest.self, context: context)
            return JSONResponse(try await store.delete(body, requestID: context.requestID, logger: context.logger))
        }
        group.post(RouterPath(InternalPath.cleanupHousekeeping)) { request, context in
            let body = try await request.decodeJSON(HousekeepingRequest.self, context: context)
            return JSONResponse(try await store.housekeeping(body, logger: context.logger))
        }
        group.post(RouterPath(InternalPath.cleanupFinish)) { request, context in
            let body = try await request.decodeJSON(CleanupFinishRequest.self, context: context)
            try await store.finish(body, logger: context.logger)
            return JSONResponse(EmptyObject())
        }
    }
}
