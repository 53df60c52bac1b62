import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

@testable import TesseraShared
@testable import UserDirectory

@Suite("user-directory on a real PostgreSQL", .enabled(if: PostgresSupport.available))
struct DirectoryPostgresTests {
    let logger = PostgresSupport.logger
    static let retention = Duration.seconds(3600)
    /// Cheap parameters, set explicitly: the production ones are exercised by the test vector.
    static let hasher = PasswordHasher(pool: HashingPool(threads: 2, queueLength: 64), rounds: 8, memCost: 8)

    @Test("by default the pool opens DATABASE_POOL_MAX connections at start and lends only those")
    func fixedSizePool() async throws {
        let url = try #require(PostgresSupport.url)
        var target = try DatabaseTarget.fromURL(url)
        try target.applySettings(ConfigReader(["DATABASE_URL": url, "DATABASE_POOL_MAX": "3"]))
        let name = "tessera-pool-\(UInt32.random(in: 0...UInt32.max))"
        target.client.options.additionalStartupParameters = [("application_name", name)]
        let database = Database(target: target, logger: logger)
        try await PostgresSupport.slots.run {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await database.run() }
                defer { group.cancelAll() }
                // Opened before any operation asks for one (the pool's minimum is its maximum).
                var count: Int64 = 0
                for _ in 0..<100 where count < 3 {
                    try await Task.sleep(for: .milliseconds(50))
                    count = try await Self.connections(named: name, on: database)
                }
                #expect(count == 3)
                let pids = try await withThrowingTaskGroup(of: Int32.self) { queries in
                    for _ in 0..<40 {
                        queries.addTask {
                            let rows = try await database.query(
                                "SELECT pg_backend_pid() FROM pg_sleep(0.005)", logger: PostgresSupport.logger)
                            var pid: Int32 = 0
                            for try await value in rows.decode(Int32.self) { pid = value }
                            return pid
                        }
                    }
                    return try await queries.reduce(into: Set<Int32>()) { $0.insert($1) }
                }
                #expect(pids.count == 3)
                #expect(try await Self.connections(named: name, on: database) == 3)
            }
        }
    }

    /// The server's connections whose `application_name` is `name`.
    static func connections(named name: String, on database: Database) async throws -> Int64 {
        let rows = try await database.query(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = \(name)", logger: PostgresSupport.logger)
        var count: Int64 = 0
        for try await value in rows.decode(Int64.self) { count = value }
        return count
    }

    @Test("with several servers in DATABASE_URL, operations go to the one that takes writes")
    func locatesWritablePrimary() async throws {
        let (target, real) = try Self.refusedThenReal()
        #expect(target.endpoints == [DatabaseEndpoint(host: "127.0.0.1", port: 1), real])
        let database = Database(target: target, logger: logger)
        #expect(database.endpoint.port == 1)
        try await PostgresSupport.slots.run { try await Self.usePrimary(of: database, real: real, target: target) }
    }

    @Test("with several servers in DATABASE_URL, a graceful shutdown stops the database service at once")
    func replicatedStopsOnGracefulShutdown() async throws {
        let database = Database(target: try Self.refusedThenReal().target, logger: logger)
        try await PostgresSupport.slots.run {
            var configuration = ServiceGroupConfiguration(services: [database], logger: PostgresSupport.logger)
            // Past this the group cancels the service: without the fix the test fails instead of hanging.
            configuration.maximumGracefulShutdownDuration = .seconds(8)
            let group = ServiceGroup(configuration: configuration)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                try await database.waitForPrimary(within: .seconds(10))
                let asked = ContinuousClock.now
                await group.triggerGracefulShutdown()
                try await tasks.next()
                // It waited for cancellation before: the shutdown timeout, 25 s in the services.
                #expect(ContinuousClock.now - asked < .seconds(5))
            }
        }
    }

    /// The test server's DATABASE_URL with a refused port listed first, as a lost primary would be,
    /// and the test server's endpoint.
    static func refusedThenReal() throws -> (target: DatabaseTarget, real: DatabaseEndpoint) {
        let url = try #require(PostgresSupport.url)
        let real = try DatabaseTarget.fromURL(url).endpoints[0]
        let target = try DatabaseTarget.fromURL(
            url.replacingOccurrences(of: "@\(real)/", with: "@127.0.0.1:1,\(real)/"))
        return (target, real)
    }

    static func usePrimary(of database: Database, real: DatabaseEndpoint, target: DatabaseTarget) async throws {
        let logger = PostgresSupport.logger
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.run() }
            defer { group.cancelAll() }
            try await database.waitForPrimary(within: .seconds(10))
            #expect(database.endpoint == real && database.switchCount.load(ordering: .relaxed) == 1)
            let rows = try await database.query("SELECT 41 + 1", logger: logger)
            for try await answer in rows.decode(Int.self) { #expect(answer == 42) }
            #expect(try await database.probe(real))
            await #expect(throws: (any Error).self) { try await database.probe(target.endpoints[0]) }
        }
    }

    @Test("migrations apply once, are recorded, and a second run applies nothing")
    func migrationsAreIdempotent() async throws {
        try await PostgresSupport.withDatabase(migrate: false) { (client: Database) async throws -> Void in
            let runner = MigrationRunner(client: client)
            await expectFirebaseErrorFree { _ = try await runner.migrate(logger: logger) }
            #expect(try await runner.migrate(logger: logger).isEmpty)
            #expect(try await runner.check(logger: logger) == Migrations.latestVersion)
        }
    }

    @Test("a service refuses a schema with pending migrations or with one it does not know")
    func unknownSchemaIsRefused() async throws {
        try await PostgresSupport.withDatabase(migrate: false) { (client: Database) async throws -> Void in
            let runner = MigrationRunner(client: client)
            await #expect(throws: MigrationError.self) { _ = try await runner.check(logger: logger) }
            try await runner.migrate(logger: logger)
            try await client.query(
                "INSERT INTO schema_migrations (version, name) VALUES (9999, 'future')", logger: logger)
            await #expect(throws: MigrationError.self) { _ = try await runner.check(logger: logger) }
            await #expect(throws: MigrationError.self) { _ = try await runner.migrate(logger: logger) }
        }
    }

    @Test("tenants are created, listed page by page, updated and deleted")
    func tenantLifecycle() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let tenants = PostgresTenantStore(client: client, anonymousRetention: Self.retention)
            for name in ["alpha-1", "beta-2", "gamma-3"] {
                _ = try await tenants.create(ScopeSettings(scope: Scope(wire: name), displayName: name), logger: logger)
            }
            let first = try await tenants.list(after: nil, limit: 2, logger: logger)
            #expect(first.map(\.scope.key) == ["alpha-1", "beta-2"])
            let second = try await tenants.list(after: Scope(wire: "beta-2"), limit: 2, logger: logger)
            #expect(second.map(\.scope.key) == ["gamma-3"])
            let updated = try await tenants.update(Scope(wire: "beta-2"), logger: logger) {
                $0.enableAnonymousUser = true
            }
            #expect(updated?.enableAnonymousUser == true)
            #expect(try await tenants.get(Scope(wire: "beta-2"), logger: logger)?.enableAnonymousUser == true)
            #expect(try await tenants.update(Scope(wire: "nope"), logger: logger) { _ in } == nil)
            #expect(try await tenants.delete(Scope(wire: "beta-2"), logger: logger))
            #expect(try await tenants.get(Scope(wire: "beta-2"), logger: logger) == nil)
            #expect(!(try await tenants.delete(Scope(wire: "beta-2"), logger: logger)))
            // The default scope exists and is never listed or deleted.
            #expect(try await tenants.get(.project, logger: logger) != nil)
            #expect(!(try await tenants.delete(.project, logger: logger)))
        }
    }

    @Test("a deleted tenant's rate counters and audit entries go with it; other scopes' stay")
    func tenantDeletionTakesItsCountersAndAudit() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let tenants = PostgresTenantStore(client: client, anonymousRetention: Self.retention)
            let audit = AdminCredentialStore(client: client, bootstrapSecret: "bootstrap-secret")
            for name in ["gone-1", "kept-1"] {
                _ = try await tenants.create(ScopeSettings(scope: Scope(wire: name), displayName: name), logger: logger)
            }
            for scope in ["gone-1", "kept-1", ""] {
                try await client.withConnection { connection in
                    try await RateLimiter.hit(
                        connection, scope: Scope(wire: scope), bucket: "sign_up", key: "203.0.113.7", limit: 100,
                        logger: logger)
                }
                try await audit.audit(
                    scope: Scope(wire: scope), actor: "bootstrap", action: "POST /test", target: "/test",
                    requestID: "r-\(scope)",
                    logger: logger)
            }
            #expect(try await tenants.delete(Scope(wire: "gone-1"), logger: logger))

            func rows(_ table: String, _ scope: String) async throws -> Int64 {
                let rows = try await client.query(
                    "SELECT count(*) FROM \(unescaped: table) WHERE tenant_id = \(scope)", logger: logger)
                for try await count in rows.decode(Int64.self) { return count }
                return -1
            }
            for table in ["rate_counters", "audit_log"] {
                #expect(try await rows(table, "gone-1") == 0, "\(table) of the deleted tenant")
                #expect(try await rows(table, "kept-1") == 1, "\(table) of another tenant")
                #expect(try await rows(table, "") == 1, "\(table) of the default scope")
            }
            // Nothing can be written for a tenant that does not exist (it would outlive any deletion).
            await #expect(throws: PSQLError.self) {
                try await audit.audit(
                    scope: Scope(wire: "gone-1"), actor: "bootstrap", action: "POST /test", target: "/test",
                    requestID: "late",
                    logger: logger)
            }
        }
    }

    @Test("migration 12 keeps past tenant deletions in the project's log and drops the rest of deleted tenants")
    func migrationTwelveMovesDeletionEntries() async throws {
        try await PostgresSupport.withDatabase(migrate: false) { (client: Database) async throws -> Void in
            let before = Migrations.all.filter { $0.version < 12 }
            _ = try await MigrationRunner(client: client, migrations: before).migrate(logger: logger)
            try await client.query(
                """
                INSERT INTO tenants (tenant_id, display_name) VALUES ('alive-1', 'alive')
                """, logger: logger)
            // As the previous version wrote them: a deletion under the deleted tenant's own id.
            for (tenant, action) in [
                ("gone-1", "DELETE /v2/projects/{project}/tenants/{tenant}"),
                ("gone-1", "POST /v1/projects/{project}/tenants/{tenant}/accounts"), ("alive-1", "POST /x"),
            ] {
                try await client.query(
                    """
                    INSERT INTO audit_log (tenant_id, actor, action, target, request_id)
                    VALUES (\(tenant), 'bootstrap', \(action), '/v2/projects/p/tenants/gone-1', 'r')
                    """, logger: logger)
            }
            try await client.query(
                """
                INSERT INTO rate_counters (tenant_id, bucket, key, window_start, count)
                VALUES ('gone-1', 'sign_up', 'k', now(), 1), ('alive-1', 'sign_up', 'k', now(), 1)
                """, logger: logger)
            let through12 = Migrations.all.filter { $0.version <= 12 }
            #expect(try await MigrationRunner(client: client, migrations: through12).migrate(logger: logger) == [12])
            var entries: [String] = []
            for try await (tenant, action) in try await client.query(
                "SELECT tenant_id, action FROM audit_log ORDER BY id", logger: logger
            ).decode((String, String).self) {
                entries.append("\(tenant) \(action)")
            }
            // The deletion moved to the project's log (tenant ""); the deleted tenant's other entry went.
            #expect(entries == [" DELETE /v2/projects/{project}/tenants/{tenant}", "alive-1 POST /x"])
            var counters: [String] = []
            for try await tenant in try await client.query(
                "SELECT tenant_id FROM rate_counters", logger: logger
            ).decode(String.self) {
                counters.append(tenant)
            }
            #expect(counters == ["alive-1"])
        }
    }

    @Test("migration 21 makes anonymous accounts that have a linked provider permanent, and no other")
    func migrationTwentyOne() async throws {
        try await PostgresSupport.withDatabase(migrate: false) { (client: Database) async throws -> Void in
            let before = Migrations.all.filter { $0.version < 21 }
            _ = try await MigrationRunner(client: client, migrations: before).migrate(logger: logger)
            try await client.query("INSERT INTO tenants (tenant_id) VALUES ('t-1')", logger: logger)
            try await client.query(
                """
                INSERT INTO users (tenant_id, local_id, valid_since, created_at, is_anonymous, anonymous_due_at)
                VALUES ('t-1', 'linked', 0, 0, true, now()), ('t-1', 'anonymous', 0, 0, true, now())
                """, logger: logger)
            try await client.query(
                """
                INSERT INTO provider_links (tenant_id, provider_id, raw_id, local_id, federated_id)
                VALUES ('t-1', 'google.com', 'g-1', 'linked', 'g-1')
                """, logger: logger)
            #expect(
                try await MigrationRunner(client: client).migrate(logger: logger)
                    == Migrations.all.map(\.version).filter { $0 >= 21 })
            var rows: [String: (Bool, Bool)] = [:]
            for try await (id, anonymous, due) in try await client.query(
                "SELECT local_id, is_anonymous, anonymous_due_at IS NOT NULL FROM users", logger: logger
            ).decode((String, Bool, Bool).self) {
                rows[id] = (anonymous, due)
            }
            #expect(rows["linked"].map { !$0.0 && !$0.1 } == true, "\(rows)")
            #expect(rows["anonymous"].map { $0.0 && $0.1 } == true, "\(rows)")
        }
    }

    @Test(
        "migration 14 marks tenants' hashes as the project key's, brings emails to NFC, and moves the credential sequence"
    )
    func migrationFourteen() async throws {
        try await PostgresSupport.withDatabase(migrate: false) { (client: Database) async throws -> Void in
            let before = Migrations.all.filter { $0.version < 14 }
            _ = try await MigrationRunner(client: client, migrations: before).migrate(logger: logger)
            try await client.query("INSERT INTO tenants (tenant_id) VALUES ('t-1')", logger: logger)
            let nfd = "jose\u{301}@example.com"
            let nfc = "jos\u{E9}@example.com"
            try await client.query(
                """
                INSERT INTO users (tenant_id, local_id, email, valid_since, created_at, password_algorithm, password_params)
                VALUES ('t-1', 'native', \(nfd), 0, 0, 'SCRYPT', '{"memCost":14,"rounds":8}'),
                    ('t-1', 'imported', NULL, 0, 0, 'SCRYPT', '{"memCost":14,"rounds":8,"signerKey":"a2V5"}'),
                    ('', 'project', NULL, 0, 0, 'SCRYPT', '{"memCost":14,"rounds":8}'),
                    ('', 'taken', \(nfc), 0, 0, NULL, NULL), ('', 'clash', \(nfd), 0, 0, NULL, NULL)
                """, logger: logger)
            #expect(
                try await MigrationRunner(client: client).migrate(logger: logger)
                    == Migrations.all.map(\.version).filter { $0 >= 14 })
            var rows: [String: (String?, String?)] = [:]
            for try await (id, email, params) in try await client.query(
                "SELECT local_id, email, password_params FROM users", logger: logger
            ).decode((String, String?, String?).self) {
                rows[id] = (email, params)
            }
            let native = try #require(rows["native"]?.1)
            #expect(native.contains("\"projectKey\": true"), "a tenant's own native hash was the project key's")
            let imported = try #require(rows["imported"]?.1)
            let project = try #require(rows["project"]?.1)
            #expect(imported.contains("projectKey") == false, "an imported hash names its own key")
            #expect(project.contains("projectKey") == false, "the default scope's hashes are the project's")
            #expect(rows["native"]?.0 == nfc)
            #expect(rows["clash"]?.0 == nfd, "left for the operator: another account has the NFC form")
            // A credential change moves the sequence; a sign-in's re-hash (same password_updated_at) does not.
            func sequence() async throws -> Int64 {
                for try await seq in try await client.query(
                    "SELECT credential_seq FROM users WHERE local_id = 'native'", logger: logger
                ).decode(Int64.self) { return seq }
                return -1
            }
            let start = try await sequence()
            try await client.query(
                "UPDATE users SET password_hash = 'rehash' WHERE local_id = 'native'", logger: logger)
            #expect(try await sequence() == start)
            try await client.query(
                "UPDATE users SET password_updated_at = 1 WHERE local_id = 'native'", logger: logger)
            #expect(try await sequence() == start + 1)
            try await client.query("UPDATE users SET disabled = true WHERE local_id = 'native'", logger: logger)
            #expect(try await sequence() == start + 2)
        }
    }

    @Test("an unexpected PostgreSQL error is logged without the row values its detail quotes")
    func databaseErrorsAreRedacted() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let tenants = PostgresTenantStore(client: client, anonymousRetention: Self.retention)
            _ = try await tenants.create(
                ScopeSettings(scope: Scope(wire: "quoted-1"), displayName: "quoted"), logger: logger)
            let duplicate = "INSERT INTO tenants (tenant_id, display_name) VALUES ('quoted-1', 'secret-ish')"
            do {
                try await client.query(PostgresQuery(unsafeSQL: duplicate), logger: logger)
                Issue.record("the duplicate was accepted")
            } catch let error as PSQLError {
                #expect(error.serverInfo?[.detail]?.contains("quoted-1") == true, "PostgreSQL quotes the row")
                let metadata = DatabaseErrorMiddleware<DirectoryContext>.redacted(error)
                #expect(metadata["psql.sqlstate"] == "23505")
                #expect(!metadata.values.contains { "\($0)".contains("quoted-1") }, "\(metadata)")
            }
        }
    }

    @Test("anonymous sign-up obeys disableAuth, disabledUserSignup and enableAnonymousUser")
    func anonymousSignUpSwitches() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let tenants = PostgresTenantStore(client: client, anonymousRetention: Self.retention)
            let accounts = Accounts(
                client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
            _ = try await tenants.create(ScopeSettings(scope: Scope(wire: "t1"), displayName: "t1"), logger: logger)
            let expires = Int64(Date().timeIntervalSince1970) + 3600
            func signUp() async throws {
                _ = try await accounts.sessions.signUpAnonymous(
                    scope: Scope(wire: "t1"), refreshTokenHash: UUID().uuidString, sessionExpiresAt: expires,
                    logger: logger)
            }
            await expectFirebaseError("ADMIN_ONLY_OPERATION") { try await signUp() }
            _ = try await tenants.update(Scope(wire: "t1"), logger: logger) {
                $0.enableAnonymousUser = true; $0.disabledUserSignup = true
            }
            await expectFirebaseError("ADMIN_ONLY_OPERATION") { try await signUp() }
            _ = try await tenants.update(Scope(wire: "t1"), logger: logger) {
                $0.disabledUserSignup = false; $0.disableAuth = true
            }
            await expectFirebaseError("PROJECT_DISABLED") { try await signUp() }
            _ = try await tenants.update(Scope(wire: "t1"), logger: logger) { $0.disableAuth = false }
            try await signUp()
            await expectFirebaseError("TENANT_NOT_FOUND") {
                _ = try await accounts.sessions.signUpAnonymous(
                    scope: Scope(wire: "missing"), refreshTokenHash: "h", sessionExpiresAt: expires, logger: logger)
            }
        }
    }

    /// Creates an anonymous user in a fresh tenant; returns its id and first refresh-token hash.
    func newSession(_ client: Database, tenant: String = "t1") async throws -> (String, String) {
        let tenants = PostgresTenantStore(client: client, anonymousRetention: Self.retention)
        let accounts = Accounts(
            client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
        if try await tenants.get(Scope(wire: tenant), logger: logger) == nil {
            _ = try await tenants.create(
                ScopeSettings(scope: Scope(wire: tenant), displayName: tenant, enableAnonymousUser: true),
                logger: logger)
        }
        let hash = "h-\(UUID())"
        let (user, _) = try await accounts.sessions.signUpAnonymous(
            scope: Scope(wire: tenant), refreshTokenHash: hash,
            sessionExpiresAt: Int64(Date().timeIntervalSince1970) + 3600,
            logger: logger)
        return (user.localId, hash)
    }

    /// Links google.com (raw id g-1) and then apple.com (a-1) to a user.
    func linkTwoProviders(_ client: Database, tenant: String, localId: String) async throws {
        for (provider, rawId) in [("google.com", "g-1"), ("apple.com", "a-1")] {
            try await client.query(
                """
                INSERT INTO provider_links (tenant_id, provider_id, raw_id, local_id)
                VALUES (\(tenant), \(provider), \(rawId), \(localId))
                """, logger: logger)
        }
    }

    func rotation(_ old: String, _ new: String, grace: Int64 = 10) -> RotateRefreshTokenRequest {
        RotateRefreshTokenRequest(
            tokenHash: old, newTokenHash: new, sealedSuccessor: "sealed:\(new)",
            graceSeconds: grace, idleSeconds: 3600)
    }

    @Test("rotation: a current token rotates, a grace retry replays, a later reuse revokes the family")
    func rotationRules() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = Accounts(
                client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
            let (localId, first) = try await newSession(client)
            let rotated = try await accounts.sessions.rotateRefreshToken(rotation(first, "second"), logger: logger)
            #expect(rotated.outcome == .rotated && rotated.user.localId == localId)
            let replay = try await accounts.sessions.rotateRefreshToken(rotation(first, "other"), logger: logger)
            #expect(replay.outcome == .replayed && replay.sealedSuccessor == "sealed:second")
            #expect(replay.session.tokenIssuedAt == rotated.session.tokenIssuedAt)
            // Outside the window (grace 0 s): reuse of the first token revokes the whole family.
            await expectFirebaseError("TOKEN_EXPIRED") {
                _ = try await accounts.sessions.rotateRefreshToken(rotation(first, "third", grace: -1), logger: logger)
            }
            await expectFirebaseError("TOKEN_EXPIRED") {
                _ = try await accounts.sessions.rotateRefreshToken(rotation("second", "fourth"), logger: logger)
            }
            await expectFirebaseError("INVALID_REFRESH_TOKEN") {
                _ = try await accounts.sessions.rotateRefreshToken(rotation("unknown", "x"), logger: logger)
            }
        }
    }

    @Test("a rotation returns the user as it now is: this refresh's time, its provider links in order")
    func rotationReturnsTheUser() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = Accounts(
                client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
            let tenant = "rotation-tenant"
            let (localId, first) = try await newSession(client, tenant: tenant)
            try await linkTwoProviders(client, tenant: tenant, localId: localId)
            try await client.query(
                "UPDATE users SET last_refresh_at = 1, display_name = 'Ada' WHERE tenant_id = \(tenant) AND local_id = \(localId)",
                logger: logger)
            let before = AccountRows.nowMillis()
            let rotated = try await accounts.sessions.rotateRefreshToken(rotation(first, "r-second"), logger: logger)
            #expect(rotated.outcome == .rotated)
            #expect(rotated.user.localId == localId && rotated.user.displayName == "Ada")
            // Written by the rotation itself, not read before it.
            #expect((rotated.user.lastRefreshAt ?? 0) >= before)
            #expect(rotated.user.providerUserInfo.map(\.providerId) == ["apple.com", "google.com"])
            let replay = try await accounts.sessions.rotateRefreshToken(rotation(first, "r-other"), logger: logger)
            #expect(replay.outcome == .replayed && replay.user.lastRefreshAt == rotated.user.lastRefreshAt)
            #expect(replay.user.providerUserInfo.map(\.rawId) == ["a-1", "g-1"])
        }
    }

    @Test("a client's lookup: the user with its links, or TENANT_NOT_FOUND, PROJECT_DISABLED, USER_NOT_FOUND")
    func lookupOfOneUser() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = Accounts(
                client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
            let tenant = "lookup-tenant"
            let (localId, _) = try await newSession(client, tenant: tenant)
            let (other, _) = try await newSession(client, tenant: tenant)
            try await linkTwoProviders(client, tenant: tenant, localId: localId)
            let user = try await accounts.sessions.userForClient(
                scope: Scope(wire: tenant), localId: localId, logger: logger)
            #expect(user.localId == localId && user.providerUserInfo.map(\.rawId) == ["a-1", "g-1"])
            let unlinked = try await accounts.sessions.userForClient(
                scope: Scope(wire: tenant), localId: other, logger: logger)
            #expect(unlinked.localId == other && unlinked.providerUserInfo.isEmpty)
            await expectFirebaseError("USER_NOT_FOUND") {
                _ = try await accounts.sessions.userForClient(
                    scope: Scope(wire: tenant), localId: "nobody", logger: logger)
            }
            await expectFirebaseError("TENANT_NOT_FOUND") {
                _ = try await accounts.sessions.userForClient(
                    scope: Scope(wire: "no-such-tenant"), localId: localId, logger: logger)
            }
            try await client.query("UPDATE tenants SET disable_auth = true WHERE tenant_id = \(tenant)", logger: logger)
            await expectFirebaseError("PROJECT_DISABLED") {
                _ = try await accounts.sessions.userForClient(
                    scope: Scope(wire: tenant), localId: localId, logger: logger)
            }
        }
    }

    /// docs/protocol/tokens.md#token-rules
    @Test("a session ends when idle too long or past its absolute lifetime")
    func sessionLifetimes() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = Accounts(
                client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
            // Idle: last used two hours ago, idle limit one hour.
            let (idleUser, idleToken) = try await newSession(client)
            try await client.query(
                "UPDATE refresh_families SET last_used_at = now() - interval '2 hours' WHERE local_id = \(idleUser)",
                logger: logger)
            await expectFirebaseError("TOKEN_EXPIRED") {
                _ = try await accounts.sessions.rotateRefreshToken(rotation(idleToken, "i1"), logger: logger)
            }
            // Absolute: recently used, but past its end.
            let (oldUser, oldToken) = try await newSession(client)
            try await client.query(
                "UPDATE refresh_families SET expires_at = now() - interval '1 second' WHERE local_id = \(oldUser)",
                logger: logger)
            await expectFirebaseError("TOKEN_EXPIRED") {
                _ = try await accounts.sessions.rotateRefreshToken(rotation(oldToken, "a1"), logger: logger)
            }
            // A fresh session within both limits rotates.
            let (_, fresh) = try await newSession(client)
            #expect(
                try await accounts.sessions.rotateRefreshToken(rotation(fresh, "f1"), logger: logger).outcome
                    == .rotated)
        }
    }

    @Test("twenty concurrent rotations of one token produce one successor")
    func concurrentRotations() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = Accounts(
                client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
            let (_, first) = try await newSession(client)
            let answers = try await withThrowingTaskGroup(of: RotateRefreshTokenResponse.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try await accounts.sessions.rotateRefreshToken(
                            rotation(first, "candidate-\(index)"), logger: logger)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.filter { $0.outcome == .rotated }.count == 1)
            let winner = try #require(answers.first { $0.outcome == .rotated })
            let successors = Set(answers.map { $0.sealedSuccessor ?? "" }.filter { !$0.isEmpty })
            #expect(successors.count == 1)
            let successor = String(try #require(successors.first).dropFirst("sealed:".count))
            // The successor is the one current token of the family and rotates normally.
            let next = try await accounts.sessions.rotateRefreshToken(rotation(successor, "after"), logger: logger)
            #expect(next.outcome == .rotated && next.session.familyId == winner.session.familyId)
        }
    }

    @Test("a validSince bump, a disabled user and a deleted user end the session")
    func revocation() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = Accounts(
                client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
            let (localId, first) = try await newSession(client)
            try await client.query("UPDATE users SET disabled = true WHERE local_id = \(localId)", logger: logger)
            await expectFirebaseError("USER_DISABLED") {
                _ = try await accounts.sessions.rotateRefreshToken(rotation(first, "n1"), logger: logger)
            }
            try await client.query(
                "UPDATE users SET disabled = false, valid_since = valid_since + 100 WHERE local_id = \(localId)",
                logger: logger)
            await expectFirebaseError("TOKEN_EXPIRED") {
                _ = try await accounts.sessions.rotateRefreshToken(rotation(first, "n2"), logger: logger)
            }
            let (other, token) = try await newSession(client)
            #expect(try await accounts.admin.delete(scope: Scope(wire: "t1"), localId: other, logger: logger))
            await expectFirebaseError("USER_NOT_FOUND") {
                _ = try await accounts.sessions.rotateRefreshToken(rotation(token, "n3"), logger: logger)
            }
            // A new user that happens to get the same id inherits none of the old sessions.
            try await client.query(
                """
                INSERT INTO users (tenant_id, local_id, valid_since, created_at, is_anonymous)
                VALUES ('t1', \(other), 0, 0, true)
                """, logger: logger)
            await expectFirebaseError("USER_NOT_FOUND") {
                _ = try await accounts.sessions.rotateRefreshToken(rotation(token, "n4"), logger: logger)
            }
        }
    }

    @Test("a session that started in the second before validSince ends, whatever the fraction")
    func validSinceUsesWholeSeconds() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = Accounts(
                client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
            let (localId, first) = try await newSession(client)
            // Started at 1000.6 s; validSince 1001: the session predates it and must end (a rounding
            // cast would call it 1001 and keep it).
            try await client.query(
                "UPDATE refresh_families SET created_at = to_timestamp(1000.6) WHERE local_id = \(localId)",
                logger: logger)
            try await client.query(
                "UPDATE users SET valid_since = 1001 WHERE local_id = \(localId)", logger: logger)
            await expectFirebaseError("TOKEN_EXPIRED") {
                _ = try await accounts.sessions.rotateRefreshToken(rotation(first, "n1"), logger: logger)
            }
        }
    }

    @Test("users are scoped by tenant: the same id is invisible from another tenant")
    func tenantIsolation() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = Accounts(
                client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
            let (localId, _) = try await newSession(client, tenant: "ta")
            _ = try await newSession(client, tenant: "tb")
            #expect(
                try await accounts.admin.lookup(
                    scope: Scope(wire: "ta"), localIds: [localId], emails: [], phoneNumbers: [], federated: [],
                    logger: logger
                ).count == 1)
            #expect(
                try await accounts.admin.lookup(
                    scope: Scope(wire: "tb"), localIds: [localId], emails: [], phoneNumbers: [], federated: [],
                    logger: logger
                ).isEmpty)
            await expectFirebaseError("USER_NOT_FOUND") {
                _ = try await accounts.sessions.userForClient(
                    scope: Scope(wire: "tb"), localId: localId, logger: logger)
            }
            #expect(!(try await accounts.admin.delete(scope: Scope(wire: "tb"), localId: localId, logger: logger)))
        }
    }

    @Test("self-deletion obeys disabledUserDeletion; admin deletion does not")
    func deletionSwitch() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let tenants = PostgresTenantStore(client: client, anonymousRetention: Self.retention)
            let accounts = Accounts(
                client: client, anonymousRetention: Self.retention, hasher: Self.hasher)
            let (localId, _) = try await newSession(client)
            _ = try await tenants.update(Scope(wire: "t1"), logger: logger) { $0.disabledUserDeletion = true }
            await expectFirebaseError("ADMIN_ONLY_OPERATION") {
                try await accounts.sessions.deleteByUser(scope: Scope(wire: "t1"), localId: localId, logger: logger)
            }
            #expect(try await accounts.admin.delete(scope: Scope(wire: "t1"), localId: localId, logger: logger))
            _ = try await tenants.update(Scope(wire: "t1"), logger: logger) { $0.disabledUserDeletion = false }
            await expectFirebaseError("USER_NOT_FOUND") {
                try await accounts.sessions.deleteByUser(scope: Scope(wire: "t1"), localId: localId, logger: logger)
            }
        }
    }

    @Test("turning auto-cleanup on schedules existing anonymous users; turning it off keeps the schedule")
    func autodeleteScheduling() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let tenants = PostgresTenantStore(client: client, anonymousRetention: Self.retention)
            let (existing, _) = try await newSession(client)
            func due(_ id: String) async throws -> Bool {
                try await client.query(
                    "SELECT anonymous_due_at IS NOT NULL FROM users WHERE local_id = \(id)", logger: logger
                ).decode(Bool.self).first { _ in true } ?? false
            }
            #expect(!(try await due(existing)))
            _ = try await tenants.update(Scope(wire: "t1"), logger: logger) { $0.autodeleteAnonymousUsers = true }
            #expect(try await due(existing))
            let (created, _) = try await newSession(client)
            #expect(try await due(created))
            _ = try await tenants.update(Scope(wire: "t1"), logger: logger) { $0.autodeleteAnonymousUsers = false }
            #expect(try await due(existing))
            let (later, _) = try await newSession(client)
            #expect(!(try await due(later)))
        }
    }

    @Test("project config updates the default scope and the project-wide settings together")
    func projectConfig() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let tenants = PostgresTenantStore(client: client, anonymousRetention: Self.retention)
            let (scope, project) = try await tenants.projectConfig(logger: logger)
            #expect(scope.allowPasswordSignup && !scope.enableAnonymousUser && project.enableImprovedEmailPrivacy)
            let (newScope, newProject) = try await tenants.updateProjectConfig(logger: logger) { s, p in
                s.enableAnonymousUser = true
                p.allowDuplicateEmails = true
            }
            #expect(newScope.enableAnonymousUser && newProject.allowDuplicateEmails)
            let (readScope, readProject) = try await tenants.projectConfig(logger: logger)
            #expect(readScope == newScope && readProject == newProject)
        }
    }
}

func expectFirebaseErrorFree(_ body: () async throws -> Void) async {
    do { try await body() } catch { Issue.record("unexpected error \(String(reflecting: error))") }
}
