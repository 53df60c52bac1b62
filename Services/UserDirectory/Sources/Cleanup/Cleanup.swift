import Foundation
import Hummingbird
import Logging
import PostgresNIO
import TesseraShared

extension FirebaseError {
    static let leaseLost = lease(.lost, "the sweep lease expired or was taken over")
}

extension PostgresQuery.StringInterpolation {
    /// The one fence of the sweep: `UPDATE cleanup_lease … RETURNING token` renews the lease for
    /// `ttlSeconds` and returns a row only while `lease` (holder and token) still holds it. A batch
    /// statement uses it as its first CTE, so nothing is changed under a lost lease.
    mutating func appendInterpolation(renewing lease: CleanupLease, for ttlSeconds: Double) {
        appendLiteral("UPDATE cleanup_lease SET expires_at = now() + make_interval(secs => ")
        appendInterpolation(ttlSeconds)
        appendLiteral(") WHERE name = ")
        appendInterpolation(CleanupStore.leaseName)
        appendLiteral(" AND holder = ")
        appendInterpolation(lease.holder)
        appendLiteral(" AND token = ")
        appendInterpolation(lease.token)
        appendLiteral(" AND expires_at > now() RETURNING token")
    }

    /// The condition under which housekeeping prunes a row of `kind`'s table, on its unqualified
    /// columns. Written once: the scope listing and the prune statement both use it.
    mutating func appendInterpolation(prunable kind: Prunable, by request: HousekeepingRequest) {
        func olderThan(_ column: String, _ seconds: Double) {
            appendLiteral("\(column) < now() - make_interval(secs => ")
            appendInterpolation(seconds)
            appendLiteral(")")
        }
        let sessionRetention = request.sessionRetentionSeconds
        appendLiteral("(")
        switch kind {
        case .session:
            // Revoked, absolutely expired, or idle past the idle lifetime, then kept for the retention.
            olderThan("revoked_at", sessionRetention)
            appendLiteral(" OR ")
            olderThan("expires_at", sessionRetention)
            appendLiteral(" OR ")
            olderThan("last_used_at", request.refreshIdleSeconds + sessionRetention)
        case .code:
            olderThan("used_at", request.codeRetentionSeconds)
            appendLiteral(" OR ")
            olderThan("expires_at", request.codeRetentionSeconds)
        case .mail:
            olderThan("delivered_at", request.mailRetentionSeconds)
        case .sms:
            // Delivered or given up (either way without its body), kept as long as mail; the expression
            // is the one `sms_outbox_done_idx` indexes.
            olderThan("coalesce(delivered_at, failed_at)", request.mailRetentionSeconds)
        case .counter:
            // Rate-limit windows are an hour long; a day later nobody needs them.
            appendLiteral("window_start < now() - interval '1 day'")
        case .authFlow, .pendingSignIn, .phoneCode:
            // A sign-in with an identity provider, one waiting for a second factor, or a texted code
            // nobody finished: useless once expired.
            appendLiteral("expires_at < now()")
        }
        appendLiteral(")")
    }
}

/// What housekeeping prunes: sessions (`refresh_families`), codes (`oob_codes`), delivered mail
/// (`mail_outbox`), delivered or given-up text messages (`sms_outbox`), rate-limit windows
/// (`rate_counters`), abandoned sign-ins with identity providers (`auth_flows`) and sign-ins that waited
/// for a second factor in vain (`mfa_pending_sign_ins`), and texted codes nobody used (`phone_codes`).
enum Prunable {
    case session, code, mail, sms, counter, authFlow, pendingSignIn, phoneCode
}

/// The directory's side of the anonymous cleanup and housekeeping (docs/protocol/admin.md#anonymous-cleanup):
/// the sweep lease, the conditional delete of due accounts, pruning, and what admins see of it. Every account
/// query filters by scope; the worker walks the scopes.
struct CleanupStore: Sendable {
    let client: Database
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
            throw FirebaseError.lease(.held, "another worker is sweeping")
        }
        let rows = try await client.query(
            """
            SELECT t.tenant_id FROM tenants t
            WHERE EXISTS (SELECT 1 FROM users u WHERE u.tenant_id = t.tenant_id AND u.is_anonymous
                AND u.anonymous_due_at <= now())
            ORDER BY t.tenant_id
            """, logger: logger)
        var tenants: [Scope] = []
        for try await tenant in rows.decode(Scope.self) { tenants.append(tenant) }
        return CleanupLeaseResponse(lease: CleanupLease(holder: request.holder, token: token), tenants: tenants)
    }

    /// Checks the lease and holds it (share lock) for the rest of the caller's transaction.
    static func checkLease(_ connection: PostgresConnection, _ lease: CleanupLease, logger: Logger) async throws {
        try await expectLease(
            connection.query(
                """
                SELECT token FROM cleanup_lease
                WHERE name = \(leaseName) AND holder = \(lease.holder) AND token = \(lease.token) AND expires_at > now()
                FOR SHARE
                """, logger: logger))
    }

    /// `LEASE_LOST` unless `rows` (a lease check or renewal) has a row.
    static func expectLease(_ rows: PostgresRowSequence) async throws {
        for try await _ in rows.decode(Int64.self) { return }
        throw FirebaseError.leaseLost
    }

    /// One batch of the sweep, in one statement (one round trip, its own transaction): renew the lease
    /// (fenced by holder and token), pick the scope's next `limit` accounts that are anonymous and due (and
    /// see whether more are due, so the worker needs no empty last call), delete those still anonymous and
    /// due when their row is locked — an upgrade committed meanwhile makes PostgreSQL re-check the row and
    /// keep it (docs/protocol/admin.md#anonymous-cleanup) —, end their sessions, grow the scope's counters
    /// and write the audit entry. Nothing changes when the lease is lost.
    func deleteDue(_ request: CleanupDeleteDueRequest, requestID: String, logger: Logger) async throws
        -> CleanupDeleteDueResponse
    {
        let scope = request.scope
        let limit = max(1, min(request.limit, 10_000))
        let lease = request.lease
        let rows = try await client.query(
            """
            WITH lease AS (\(renewing: lease, for: request.ttlSeconds)), listed AS (
                SELECT local_id, row_number() OVER (ORDER BY anonymous_due_at, local_id) AS position FROM users
                WHERE tenant_id = \(scope: scope) AND is_anonymous AND anonymous_due_at <= now()
                    AND EXISTS (SELECT 1 FROM lease)
                ORDER BY anonymous_due_at, local_id LIMIT \(limit + 1)
            ), due AS (
                SELECT local_id FROM listed WHERE position <= \(limit)
            ), gone AS (
                DELETE FROM users
                WHERE tenant_id = \(scope: scope) AND local_id IN (SELECT local_id FROM due) AND is_anonymous
                    AND anonymous_due_at <= now()
                RETURNING local_id
            ), revoked AS (
                UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'user_deleted'
                WHERE tenant_id = \(scope: scope) AND local_id IN (SELECT local_id FROM gone) AND revoked_at IS NULL
            ), batch AS (
                SELECT count(*) AS deleted FROM gone
            ), stats AS (
                INSERT INTO cleanup_stats (tenant_id, last_sweep_id, last_sweep_at, last_sweep_deleted, total_deleted)
                SELECT \(scope: scope), \(lease.token), now(), deleted, deleted FROM batch WHERE deleted > 0
                ON CONFLICT (tenant_id) DO UPDATE SET
                    last_sweep_deleted = CASE WHEN cleanup_stats.last_sweep_id = EXCLUDED.last_sweep_id
                        THEN cleanup_stats.last_sweep_deleted + EXCLUDED.last_sweep_deleted
                        ELSE EXCLUDED.last_sweep_deleted END,
                    last_sweep_id = EXCLUDED.last_sweep_id, last_sweep_at = now(),
                    total_deleted = cleanup_stats.total_deleted + EXCLUDED.total_deleted
            ), audit AS (
                INSERT INTO audit_log (tenant_id, actor, action, target, request_id)
                SELECT \(scope: scope), 'system:cleanup', 'anonymousCleanup.delete', 'users:' || deleted, \(requestID)
                FROM batch WHERE deleted > 0
            )
            SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM due), (SELECT deleted FROM batch),
                (SELECT count(*) FROM listed) > \(limit)
            """, logger: logger)
        for try await (held, due, deleted, more) in rows.decode((Int64, Int64, Int64, Bool).self) where held > 0 {
            return CleanupDeleteDueResponse(due: Int(due), deleted: Int(deleted), more: more)
        }
        throw FirebaseError.leaseLost
    }

    /// Prunes, scope by scope and in bounded batches: sessions revoked, absolutely expired or idle
    /// for longer than the retention; codes used or expired; delivered mail; delivered or given-up
    /// text messages.
    func housekeeping(_ request: HousekeepingRequest, logger: Logger) async throws -> HousekeepingResponse {
        var result = HousekeepingResponse()
        let limit = max(1, min(request.batchSize, 10_000))
        try await renew(request.lease, ttlSeconds: request.ttlSeconds, logger: logger)
        // The scopes with anything to prune (one statement, instead of one pruning statement for each
        // of possibly thousands of tenants at every sweep), from the first (the default scope, "",
        // included) or after the one the last call finished.
        let scopes = try await client.query(
            """
            SELECT t.tenant_id FROM tenants t
            WHERE (\(request.after == nil) OR t.tenant_id > \(scope: request.after ?? .project)) AND (
                EXISTS (SELECT 1 FROM refresh_families f
                    WHERE f.tenant_id = t.tenant_id AND \(prunable: .session, by: request))
                OR EXISTS (SELECT 1 FROM oob_codes c WHERE c.tenant_id = t.tenant_id AND \(prunable: .code, by: request))
                OR EXISTS (SELECT 1 FROM mail_outbox m WHERE m.tenant_id = t.tenant_id AND \(prunable: .mail, by: request))
                OR EXISTS (SELECT 1 FROM sms_outbox x WHERE x.tenant_id = t.tenant_id AND \(prunable: .sms, by: request))
                OR EXISTS (SELECT 1 FROM rate_counters r
                    WHERE r.tenant_id = t.tenant_id AND \(prunable: .counter, by: request))
                OR EXISTS (SELECT 1 FROM auth_flows a
                    WHERE a.tenant_id = t.tenant_id AND \(prunable: .authFlow, by: request))
                OR EXISTS (SELECT 1 FROM mfa_pending_sign_ins s
                    WHERE s.tenant_id = t.tenant_id AND \(prunable: .pendingSignIn, by: request))
                OR EXISTS (SELECT 1 FROM phone_codes pc
                    WHERE pc.tenant_id = t.tenant_id AND \(prunable: .phoneCode, by: request)))
            ORDER BY t.tenant_id
            """, logger: logger)
        var tenants: [Scope] = []
        for try await tenant in scopes.decode(Scope.self) { tenants.append(tenant) }
        let deadline = ContinuousClock.now + housekeepingBudget
        var finished: Scope?
        for tenant in tenants {
            // Stop between tenants once the budget is spent; the worker calls again from here.
            if ContinuousClock.now > deadline, let finished {
                result.resumeAfter = finished
                return result
            }
            defer { finished = tenant }
            while true {
                let counts = try await prune(scope: tenant, request: request, limit: limit, logger: logger)
                result.sessions += counts.sessions
                result.codes += counts.codes
                result.mails += counts.mails
                if max(counts.sessions, counts.codes, counts.mails) < limit { break }
            }
        }
        return result
    }

    /// One bounded batch of one scope's pruning, in one statement: renew the lease (nothing is
    /// deleted without it), then the sessions, codes, mail, text messages and rate-limit windows past
    /// their time.
    func prune(scope: Scope, request: HousekeepingRequest, limit: Int, logger: Logger) async throws
        -> HousekeepingResponse
    {
        let lease = request.lease
        let rows = try await client.query(
            """
            WITH lease AS (\(renewing: lease, for: request.ttlSeconds)), sessions AS (
                DELETE FROM refresh_families WHERE tenant_id = \(scope: scope) AND EXISTS (SELECT 1 FROM lease)
                    AND family_id IN (
                        SELECT family_id FROM refresh_families
                        WHERE tenant_id = \(scope: scope) AND \(prunable: .session, by: request) LIMIT \(limit))
                RETURNING 1
            ), codes AS (
                DELETE FROM oob_codes WHERE tenant_id = \(scope: scope) AND EXISTS (SELECT 1 FROM lease)
                    AND code_hash IN (
                        SELECT code_hash FROM oob_codes
                        WHERE tenant_id = \(scope: scope) AND \(prunable: .code, by: request) LIMIT \(limit))
                RETURNING 1
            ), mails AS (
                DELETE FROM mail_outbox WHERE tenant_id = \(scope: scope) AND EXISTS (SELECT 1 FROM lease)
                    AND id IN (
                        SELECT id FROM mail_outbox
                        WHERE tenant_id = \(scope: scope) AND \(prunable: .mail, by: request) LIMIT \(limit))
                RETURNING 1
            ), texts AS (
                DELETE FROM sms_outbox WHERE tenant_id = \(scope: scope) AND EXISTS (SELECT 1 FROM lease)
                    AND id IN (
                        SELECT id FROM sms_outbox
                        WHERE tenant_id = \(scope: scope) AND \(prunable: .sms, by: request) LIMIT \(limit))
                RETURNING 1
            ), counters AS (
                DELETE FROM rate_counters WHERE EXISTS (SELECT 1 FROM lease)
                    AND (tenant_id, bucket, key, window_start) IN (
                        SELECT tenant_id, bucket, key, window_start FROM rate_counters
                        WHERE tenant_id = \(scope: scope) AND \(prunable: .counter, by: request) LIMIT \(limit))
            ), flows AS (
                DELETE FROM auth_flows WHERE tenant_id = \(scope: scope) AND EXISTS (SELECT 1 FROM lease)
                    AND state_hash IN (
                        SELECT state_hash FROM auth_flows
                        WHERE tenant_id = \(scope: scope) AND \(prunable: .authFlow, by: request) LIMIT \(limit))
            ), pending AS (
                DELETE FROM mfa_pending_sign_ins WHERE tenant_id = \(scope: scope) AND EXISTS (SELECT 1 FROM lease)
                    AND credential_hash IN (
                        SELECT credential_hash FROM mfa_pending_sign_ins
                        WHERE tenant_id = \(scope: scope) AND \(prunable: .pendingSignIn, by: request) LIMIT \(limit))
            ), phone AS (
                DELETE FROM phone_codes WHERE tenant_id = \(scope: scope) AND EXISTS (SELECT 1 FROM lease)
                    AND session_hash IN (
                        SELECT session_hash FROM phone_codes
                        WHERE tenant_id = \(scope: scope) AND \(prunable: .phoneCode, by: request) LIMIT \(limit))
            )
            SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM sessions), (SELECT count(*) FROM codes),
                (SELECT count(*) FROM mails), (SELECT count(*) FROM texts)
            """, logger: logger)
        for try await (held, sessions, codes, mails, texts) in rows.decode((Int64, Int64, Int64, Int64, Int64).self)
        where held > 0 {
            // Text messages count as outbox messages with mail: the worker's report (and the internal
            // answer) have no field of their own for them.
            return HousekeepingResponse(sessions: Int(sessions), codes: Int(codes), mails: Int(mails + texts))
        }
        throw FirebaseError.leaseLost
    }

    /// Renews the lease, or `LEASE_LOST`.
    func renew(_ lease: CleanupLease, ttlSeconds: Double, logger: Logger) async throws {
        try await Self.expectLease(client.query("\(renewing: lease, for: ttlSeconds)", logger: logger))
    }

    /// Records the sweep as finished and frees the lease.
    func finish(_ request: CleanupFinishRequest, logger: Logger) async throws {
        try await client.transaction(logger: logger) { connection in
            try await Self.checkLease(connection, request.lease, logger: logger)
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

    // MARK: What admins see (docs/protocol/admin.md#tesseras-own-admin-resources)

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
    func preview(scope: Scope, bucketSeconds: Int, logger: Logger) async throws -> Preview {
        let retention = anonymousRetention.timeInterval
        return try await client.withConnection { connection in
            let totals = try await connection.query(
                """
                SELECT count(*), count(anonymous_due_at),
                    min(coalesce(anonymous_due_at, now() + make_interval(secs => \(retention))))
                FROM users WHERE tenant_id = \(scope: scope) AND is_anonymous
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
                      FROM users WHERE tenant_id = \(scope: scope) AND is_anonymous) d
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

    func status(scope: Scope, logger: Logger) async throws -> Status {
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
                WHERE t.tenant_id = \(scope: scope)
                """, logger: logger)
            for try await row in rows.decode((Bool, Date?, Int64?, Int64?, Int64, Int64, Int64).self) {
                let lastDeleted = row.2 != nil && row.2 == row.3 ? row.4 : 0
                return Status(
                    enabled: row.0, retention: "\(Int64(anonymousRetention.timeInterval))s",
                    lastSweepTime: row.1.map(RFC3339.seconds), lastSweepDeleted: lastDeleted, totalDeleted: row.5,
                    scheduled: row.6)
            }
            throw FirebaseError.invalid(.tenantNotFound)
        }
    }
}

/// `…/anonymousCleanup` and `…/anonymousCleanup:preview` (docs/protocol/admin.md#tesseras-own-admin-resources).
struct CleanupController<Tenants: TenantStore> {
    let store: CleanupStore
    let tenants: Tenants

    func addRoutes(to group: RouterGroup<AdminContext>) {
        for scope in ["v2/projects/{project}", "v2/projects/{project}/tenants/{tenant}"] {
            group.get("\(scope)/anonymousCleanup") { _, context in
                JSONResponse(
                    try await store.status(scope: context.scope, logger: context.logger))
            }
            group.get("\(scope)/anonymousCleanup:preview") { request, context in
                let bucket = request.uri.queryParameters.get("bucket") ?? "day"
                guard let seconds = ["hour": 3600, "day": 86400][String(bucket)] else {
                    throw FirebaseError.invalidArgument("bucket must be hour or day")
                }
                return JSONResponse(
                    try await store.preview(
                        scope: context.scope, bucketSeconds: seconds, logger: context.logger))
            }
        }
    }
}

/// The worker's internal endpoints.
struct CleanupInternalController {
    let store: CleanupStore

    func addRoutes(to group: RouterGroup<DirectoryInternalContext>) {
        group.on(InternalEndpoints.cleanupLease) { body, context in
            try await store.acquire(body, logger: context.logger)
        }
        group.on(InternalEndpoints.cleanupDeleteDue) { body, context in
            try await store.deleteDue(body, requestID: context.requestID, logger: context.logger)
        }
        group.on(InternalEndpoints.cleanupHousekeeping) { body, context in
            try await store.housekeeping(body, logger: context.logger)
        }
        group.on(InternalEndpoints.cleanupFinish) { body, context in
            try await store.finish(body, logger: context.logger)
            return EmptyObject()
        }
    }
}
