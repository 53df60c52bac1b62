import Foundation
import Logging
import PostgresNIO
import Testing

@testable import TesseraShared
@testable import UserDirectory

@Suite("anonymous cleanup and housekeeping on a real PostgreSQL", .enabled(if: PostgresSupport.available))
struct CleanupPostgresTests {
    let logger = PostgresSupport.logger
    static let hasher = PasswordHasher(pool: HashingPool(threads: 2, queueLength: 64), rounds: 8, memCost: 8)

    /// A tenant with auto-cleanup on and `count` anonymous users already due.
    func dueUsers(_ client: Database, count: Int) async throws -> (Accounts, [String]) {
        let tenants = PostgresTenantStore(client: client, anonymousRetention: .zero)
        _ = try await tenants.create(
            ScopeSettings(
                scope: Scope(wire: "t1"), displayName: "t1", allowPasswordSignup: true, enableAnonymousUser: true,
                autodeleteAnonymousUsers: true), logger: logger)
        let accounts = Accounts(client: client, anonymousRetention: .zero, hasher: Self.hasher)
        var ids: [String] = []
        for _ in 0..<count {
            let (user, _) = try await accounts.sessions.signUpAnonymous(
                scope: Scope(wire: "t1"), refreshTokenHash: UUID().uuidString,
                sessionExpiresAt: Int64(Date().timeIntervalSince1970) + 3600, logger: logger)
            ids.append(user.localId)
        }
        return (accounts, ids)
    }

    /// One sweep batch in the scope "t1".
    func deleteDue(_ store: CleanupStore, _ lease: CleanupLease, limit: Int) async throws -> CleanupDeleteDueResponse {
        try await store.deleteDue(
            CleanupDeleteDueRequest(lease: lease, ttlSeconds: 30, scope: Scope(wire: "t1"), limit: limit),
            requestID: "r",
            logger: logger)
    }

    @Test("a batch deletes only accounts still anonymous and due; an upgrade already made keeps its account")
    func upgradedBeforeTheBatch() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let (accounts, ids) = try await dueUsers(client, count: 3)
            let store = CleanupStore(client: client, anonymousRetention: .zero)
            let granted = try await store.acquire(CleanupLeaseRequest(holder: "w1", ttlSeconds: 30), logger: logger)
            #expect(granted.tenants == [Scope(wire: "t1")])
            _ = try await accounts.passwords.signUpPassword(
                SignUpPasswordRequest(
                    scope: Scope(wire: "t1"), email: "upgraded@example.com", password: "correct horse",
                    displayName: nil,
                    localId: ids[0], session: NewSession(refreshTokenHash: UUID().uuidString, expiresAt: 4_000_000_000)),
                logger: logger)
            let answer = try await deleteDue(store, granted.lease, limit: 10)
            #expect(answer.due == 2 && answer.deleted == 2)
            let left = try await accounts.admin.lookup(
                scope: Scope(wire: "t1"), localIds: ids, emails: [], phoneNumbers: [], federated: [], logger: logger)
            #expect(left.map(\.localId) == [ids[0]])
            // The deleted users' sessions ended with them; the upgraded user's did not.
            let sessions = try await client.query(
                "SELECT local_id, revoked_reason FROM refresh_families WHERE tenant_id = 't1'", logger: logger)
            for try await (localId, reason) in sessions.decode((String, String?).self) {
                #expect((reason == "user_deleted") == (localId != ids[0]), "\(localId): \(reason ?? "live")")
            }
            try await store.finish(CleanupFinishRequest(lease: granted.lease, deleted: 2), logger: logger)
            let state = try await store.status(scope: Scope(wire: "t1"), logger: logger)
            #expect(state.totalDeleted == 2 && state.lastSweepDeleted == 2 && state.lastSweepTime != nil)
        }
    }

    @Test("an upgrade committed while the batch waits for its row lock keeps the account")
    func upgradeWinsTheRace() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let (accounts, ids) = try await dueUsers(client, count: 3)
            let store = CleanupStore(client: client, anonymousRetention: .zero)
            let granted = try await store.acquire(CleanupLeaseRequest(holder: "w1", ttlSeconds: 30), logger: logger)
            // The upgrade's transaction has changed the row (as every upgrade does) but not committed
            // when the batch lists the account as due and tries to delete it.
            let answer = try await client.withConnection { upgrade in
                try await upgrade.query("BEGIN", logger: logger)
                try await upgrade.query(
                    """
                    UPDATE users SET is_anonymous = false, anonymous_due_at = NULL, email = 'raced@example.com'
                    WHERE tenant_id = 't1' AND local_id = \(ids[1])
                    """, logger: logger)
                let batch = Task {
                    try await deleteDue(store, granted.lease, limit: 10)
                }
                // Commit once the batch is waiting for the upgraded row's lock.
                var waiting = false
                for _ in 0..<200 where !waiting {
                    try await Task.sleep(for: .milliseconds(10))
                    let rows = try await client.query(
                        """
                        SELECT count(*) FROM pg_stat_activity
                        WHERE wait_event_type = 'Lock' AND query LIKE '%WITH lease AS%'
                        """, logger: logger)
                    for try await count in rows.decode(Int64.self) { waiting = count > 0 }
                }
                #expect(waiting, "the batch should wait for the upgrade's row lock")
                try await upgrade.query("COMMIT", logger: logger)
                return try await batch.value
            }
            #expect(answer.due == 3 && answer.deleted == 2)
            let left = try await accounts.admin.lookup(
                scope: Scope(wire: "t1"), localIds: ids, emails: [], phoneNumbers: [], federated: [], logger: logger)
            #expect(left.map(\.localId) == [ids[1]])
        }
    }

    @Test("revoking a session is a HOT update: no index covers the revocation columns and pages keep room")
    func revocationIsHeapOnly() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let indexed = try await client.query(
                """
                SELECT count(*) FROM pg_index i
                WHERE i.indrelid = 'refresh_families'::regclass AND (
                    EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
                        AND a.attname IN ('revoked_at', 'revoked_reason'))
                    OR coalesce(pg_get_expr(i.indpred, i.indrelid), '') LIKE '%revoked%'
                    OR coalesce(pg_get_expr(i.indexprs, i.indrelid), '') LIKE '%revoked%')
                """, logger: logger)
            for try await count in indexed.decode(Int64.self) { #expect(count == 0) }
            let options = try await client.query(
                "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'refresh_families'::regclass",
                logger: logger)
            for try await reloptions in options.decode([String].self) { #expect(reloptions.contains("fillfactor=50")) }
        }
    }

    @Test("one lease at a time; a lost lease fences its holder out")
    func leaseFencing() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            _ = try await dueUsers(client, count: 2)
            let store = CleanupStore(client: client, anonymousRetention: .zero)
            let first = try await store.acquire(CleanupLeaseRequest(holder: "w1", ttlSeconds: 0.2), logger: logger)
            await expectFirebaseError("LEASE_HELD") {
                _ = try await store.acquire(CleanupLeaseRequest(holder: "w2", ttlSeconds: 30), logger: logger)
            }
            try await Task.sleep(for: .milliseconds(400))
            let second = try await store.acquire(CleanupLeaseRequest(holder: "w2", ttlSeconds: 30), logger: logger)
            #expect(second.lease.token == first.lease.token + 1)
            // The first worker wakes up and tries to go on: refused, nothing deleted.
            await expectFirebaseError("LEASE_LOST") {
                _ = try await deleteDue(store, first.lease, limit: 10)
            }
            let answer = try await deleteDue(store, second.lease, limit: 1)
            #expect(answer.due == 1 && answer.deleted == 1 && answer.more)
            let rest = try await deleteDue(store, second.lease, limit: 1)
            #expect(rest.due == 1 && rest.deleted == 1 && !rest.more)
            await expectFirebaseError("LEASE_LOST") {
                _ = try await store.housekeeping(
                    HousekeepingRequest(
                        lease: first.lease, ttlSeconds: 30, refreshIdleSeconds: 30 * 86400,
                        sessionRetentionSeconds: 7 * 86400, codeRetentionSeconds: 86400,
                        mailRetentionSeconds: 7 * 86400, batchSize: 10), logger: logger)
            }
            let state = try await store.status(scope: Scope(wire: "t1"), logger: logger)
            #expect(state.totalDeleted == 2)
        }
    }

    @Test("housekeeping prunes ended sessions, old codes and delivered mail, and keeps the rest")
    func housekeeping() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            _ = try await dueUsers(client, count: 0)
            for (id, sql) in [
                ("live", "now() + interval '1 day', now(), NULL"),
                ("revoked-old", "now() + interval '1 day', now(), now() - interval '8 days'"),
                ("revoked-new", "now() + interval '1 day', now(), now() - interval '1 day'"),
                ("expired-old", "now() - interval '8 days', now() - interval '9 days', NULL"),
                ("idle-old", "now() + interval '100 days', now() - interval '40 days', NULL"),
            ] {
                try await client.query(
                    PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO refresh_families (tenant_id, family_id, local_id, sign_in_provider, auth_time,
                                expires_at, last_used_at, revoked_at)
                            VALUES ('t1', gen_random_uuid(), '\(id)', 'anonymous', 0, \(sql))
                            """), logger: logger)
            }
            try await client.query(
                """
                INSERT INTO oob_codes (code_hash, tenant_id, local_id, request_type, email, expires_at, used_at) VALUES
                    ('fresh', 't1', 'u', 'VERIFY_EMAIL', 'a@b.c', now() + interval '1 hour', NULL),
                    ('used-old', 't1', 'u', 'VERIFY_EMAIL', 'a@b.c', now() + interval '1 hour', now() - interval '2 days'),
                    ('expired-old', 't1', 'u', 'VERIFY_EMAIL', 'a@b.c', now() - interval '2 days', NULL)
                """, logger: logger)
            try await client.query(
                """
                INSERT INTO mail_outbox (tenant_id, recipient, subject, body, delivered_at) VALUES
                    ('t1', 'a@b.c', 's', NULL, now() - interval '8 days'),
                    ('t1', 'a@b.c', 's', NULL, now() - interval '1 day'),
                    ('t1', 'a@b.c', 's', 'queued', NULL)
                """, logger: logger)
            // The default scope ("") is pruned like every tenant.
            try await client.query(
                """
                INSERT INTO refresh_families (tenant_id, family_id, local_id, sign_in_provider, auth_time,
                    expires_at, last_used_at, revoked_at)
                VALUES ('', gen_random_uuid(), 'default-revoked-old', 'anonymous', 0, now() + interval '1 day', now(),
                    now() - interval '8 days')
                """, logger: logger)
            // Scopes holding one kind of prunable row each: housekeeping visits only scopes with something
            // to prune, and must find every kind.
            let alone = [
                (
                    "only-expired",
                    """
                    INSERT INTO refresh_families (tenant_id, family_id, local_id, sign_in_provider, auth_time,
                        expires_at, last_used_at) VALUES ('only-expired', gen_random_uuid(), 'u', 'anonymous', 0,
                        now() - interval '8 days', now() - interval '9 days')
                    """
                ),
                (
                    "only-idle",
                    """
                    INSERT INTO refresh_families (tenant_id, family_id, local_id, sign_in_provider, auth_time,
                        expires_at, last_used_at) VALUES ('only-idle', gen_random_uuid(), 'u', 'anonymous', 0,
                        now() + interval '100 days', now() - interval '40 days')
                    """
                ),
                (
                    "only-code",
                    """
                    INSERT INTO oob_codes (code_hash, tenant_id, local_id, request_type, email, expires_at, used_at)
                    VALUES ('only-code', 'only-code', 'u', 'VERIFY_EMAIL', 'a@b.c', now() + interval '1 hour',
                        now() - interval '2 days')
                    """
                ),
                (
                    "only-mail",
                    """
                    INSERT INTO mail_outbox (tenant_id, recipient, subject, body, delivered_at)
                    VALUES ('only-mail', 'a@b.c', 's', NULL, now() - interval '8 days')
                    """
                ),
                (
                    "only-counter",
                    """
                    INSERT INTO rate_counters (tenant_id, bucket, key, window_start, count)
                    VALUES ('only-counter', 'signUp', 'k', now() - interval '2 days', 1)
                    """
                ),
            ]
            for (tenant, sql) in alone {
                try await client.query(
                    PostgresQuery(
                        unsafeSQL: "INSERT INTO tenants (tenant_id, display_name) VALUES ('\(tenant)', '\(tenant)')"),
                    logger: logger)
                try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger)
            }
            let store = CleanupStore(client: client, anonymousRetention: .zero)
            let granted = try await store.acquire(CleanupLeaseRequest(holder: "w", ttlSeconds: 30), logger: logger)
            let pruned = try await store.housekeeping(
                HousekeepingRequest(
                    lease: granted.lease, ttlSeconds: 30, refreshIdleSeconds: 30 * 86400,
                    sessionRetentionSeconds: 7 * 86400, codeRetentionSeconds: 86400, mailRetentionSeconds: 7 * 86400,
                    batchSize: 1), logger: logger)
            #expect(pruned == HousekeepingResponse(sessions: 6, codes: 3, mails: 2))
            let leftAlone = try await client.query(
                """
                SELECT (SELECT count(*) FROM refresh_families WHERE tenant_id LIKE 'only-%')
                    + (SELECT count(*) FROM oob_codes WHERE tenant_id LIKE 'only-%')
                    + (SELECT count(*) FROM mail_outbox WHERE tenant_id LIKE 'only-%')
                    + (SELECT count(*) FROM rate_counters WHERE tenant_id LIKE 'only-%')
                """, logger: logger)
            for try await count in leftAlone.decode(Int64.self) { #expect(count == 0) }
            let families = try await client.query(
                "SELECT local_id FROM refresh_families WHERE tenant_id = 't1' ORDER BY local_id", logger: logger)
            var kept: [String] = []
            for try await id in families.decode(String.self) { kept.append(id) }
            #expect(kept == ["live", "revoked-new"])
        }
    }

    @Test("housekeeping over many tenants works in bounded calls that resume where the last one stopped")
    func housekeepingResumes() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            _ = try await dueUsers(client, count: 0)
            for tenant in ["h1", "h2", "h3"] {
                try await client.query(
                    PostgresQuery(
                        unsafeSQL: "INSERT INTO tenants (tenant_id, display_name) VALUES ('\(tenant)', '\(tenant)')"),
                    logger: logger)
                try await client.query(
                    PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO refresh_families (tenant_id, family_id, local_id, sign_in_provider, auth_time,
                                expires_at, last_used_at, revoked_at)
                            VALUES ('\(tenant)', gen_random_uuid(), 'old', 'anonymous', 0, now() + interval '1 day',
                                now(), now() - interval '8 days')
                            """), logger: logger)
            }
            // A spent budget: every call finishes one tenant, then says where to resume.
            var store = CleanupStore(client: client, anonymousRetention: .zero)
            store.housekeepingBudget = .zero
            let granted = try await store.acquire(CleanupLeaseRequest(holder: "w", ttlSeconds: 30), logger: logger)
            var after: Scope?
            var calls = 0
            var sessions = 0
            repeat {
                let part = try await store.housekeeping(
                    HousekeepingRequest(
                        lease: granted.lease, ttlSeconds: 30, refreshIdleSeconds: 30 * 86400,
                        sessionRetentionSeconds: 7 * 86400, codeRetentionSeconds: 86400,
                        mailRetentionSeconds: 7 * 86400, batchSize: 100, after: after), logger: logger)
                sessions += part.sessions
                after = part.resumeAfter
                calls += 1
            } while after != nil && calls < 20
            #expect(sessions == 3)
            #expect(calls >= 3, "a spent budget should hand back after each tenant")
            let left = try await client.query(
                "SELECT count(*) FROM refresh_families WHERE tenant_id IN ('h1', 'h2', 'h3')", logger: logger)
            for try await count in left.decode(Int.self) { #expect(count == 0) }
        }
    }
}
