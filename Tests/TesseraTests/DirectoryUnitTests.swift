import Foundation
import Logging
import NIOCore
import Testing

@testable import PostgresNIO
@testable import TesseraShared
@testable import UserDirectory

@Suite("user-directory logic")
struct DirectoryUnitTests {
    @Test("the service's pool has a fixed size of 10 and sends no keep-alive unless configured")
    func poolSettings() throws {
        let url = ["DATABASE_URL": "postgres://u:p@db:5433/tessera"]
        var defaults = try PostgresClient.Configuration.fromURL(url["DATABASE_URL"]!)
        try defaults.applyPoolSettings(ConfigReader(url))
        #expect(defaults.options.minimumConnections == 10 && defaults.options.maximumConnections == 10)
        #expect(defaults.options.keepAliveBehavior == nil)
        var configured = try PostgresClient.Configuration.fromURL(url["DATABASE_URL"]!)
        try configured.applyPoolSettings(
            ConfigReader(
                url.merging(["DATABASE_POOL_MIN": "0", "DATABASE_POOL_MAX": "5", "DATABASE_KEEPALIVE": "30s"]) { $1 }))
        #expect(configured.options.minimumConnections == 0 && configured.options.maximumConnections == 5)
        #expect(configured.options.keepAliveBehavior?.frequency == .seconds(30))
        var sized = try PostgresClient.Configuration.fromURL(url["DATABASE_URL"]!)
        try sized.applyPoolSettings(ConfigReader(url.merging(["DATABASE_POOL_MAX": "6"]) { $1 }))
        #expect(sized.options.minimumConnections == 6 && sized.options.maximumConnections == 6)
        for bad in [
            ["DATABASE_POOL_MIN": "6", "DATABASE_POOL_MAX": "5"], ["DATABASE_POOL_MIN": "11"],
            ["DATABASE_POOL_MAX": "0"],
            ["DATABASE_POOL_MIN": "-1"], ["DATABASE_KEEPALIVE": "often"],
        ] {
            var configuration = try PostgresClient.Configuration.fromURL(url["DATABASE_URL"]!)
            #expect(throws: ConfigError.self, "\(bad)") {
                try configuration.applyPoolSettings(ConfigReader(url.merging(bad) { $1 }))
            }
        }
        let service = try DirectoryConfiguration(
            environment: ConfigReader(
                url.merging([
                    "TESSERA_ADMIN_TOKEN": strongTestSecret, "TESSERA_INTERNAL_SECRET": strongTestSecret,
                    "DATABASE_POOL_MIN": "2",
                ]) {
                    $1
                }))
        #expect(service.database.client.options.minimumConnections == 2)
    }

    @Test("a libpq multi-host DATABASE_URL lists its servers; a single host is read as before")
    func multiHostURL() throws {
        let single = try DatabaseTarget.fromURL("postgres://u:p%40ss@db:5433/tessera?sslmode=disable")
        #expect(single.endpoints == [DatabaseEndpoint(host: "db", port: 5433)])
        #expect(single.client.host == "db" && single.client.port == 5433 && single.client.password == "p@ss")
        let multi = try DatabaseTarget.fromURL(
            "postgresql://tessera:pw@10.0.0.1:6001,node-b,[fd00::2]:6003/tessera?target_session_attrs=read-write")
        #expect(
            multi.endpoints == [
                DatabaseEndpoint(host: "10.0.0.1", port: 6001), DatabaseEndpoint(host: "node-b", port: 5432),
                DatabaseEndpoint(host: "fd00::2", port: 6003),
            ])
        #expect(
            multi.client.host == "10.0.0.1" && multi.client.database == "tessera" && multi.client.username == "tessera")
        let second = multi.client(for: multi.endpoints[2])
        #expect(second.host == "fd00::2" && second.port == 6003 && second.password == "pw")
        #expect(try DatabaseTarget.fromURL("postgres://u@a:1,b:2/d?target_session_attrs=primary").endpoints.count == 2)
        #expect(try DatabaseTarget.fromURL("postgres://u@a:1,b:2/d").endpoints.count == 2)
        for bad in [
            "postgres://u@a:1,b:2/d?target_session_attrs=any", "postgres://u@a:1,b:2/d?target_session_attrs=read-only",
            "postgres://u@a:1,,b:2/d", "postgres://u@a:x/d", "postgres://u@a:70000/d", "postgres://u@[::1/d",
            "mysql://u@a/d", "postgres://a:1/d",
        ] {
            #expect(throws: DatabaseURLError.self, "\(bad)") { try DatabaseTarget.fromURL(bad) }
        }
        let configured = try DirectoryConfiguration(
            environment: ConfigReader([
                "DATABASE_URL": "postgres://u:p@a:1,b:2/tessera", "TESSERA_ADMIN_TOKEN": strongTestSecret,
                "TESSERA_INTERNAL_SECRET": strongTestSecret, "DATABASE_PRIMARY_CHECK_INTERVAL": "2s",
            ]))
        #expect(configured.database.primaryCheckInterval == .seconds(2) && configured.database.endpoints.count == 2)
    }

    @Test("an outage (and what a failover makes operations fail with) is told apart from other errors")
    func failoverErrors() {
        func server(_ state: String) -> PSQLError { .server(.init(fields: [.sqlState: state, .message: "x"])) }
        #expect(PSQLError.uncleanShutdown.isOutage)
        #expect(PSQLError.connectionError(underlying: ChannelError.connectTimeout(.seconds(1))).isOutage)
        #expect(server("25006").isOutage)  // read_only_sql_transaction: a demoted primary
        #expect(server("57P01").isOutage)  // admin_shutdown
        #expect(server("08006").isOutage)
        #expect(!server("23505").isOutage)
        #expect(!server("22021").isOutage)
        #expect(!PSQLError.queryCancelled.isOutage)
    }

    @Test("an operation of a pool retired by a failover fails as an outage (503), never as a 500")
    func retiredPoolErrors() throws {
        struct PoolClosed: Error {}
        let configuration = try PostgresClient.Configuration.fromURL("postgres://u:p@127.0.0.1:1/d")
        let database = Database(client: configuration, logger: Logger(label: "test"))
        let retired = PostgresClient(configuration: configuration)
        #expect(database.failure(PoolClosed(), of: retired) is DatabaseUnavailable)
        #expect(database.failure(PoolClosed(), of: database.client) is PoolClosed)
        #expect(database.failure(FirebaseError.invalid(.emailExists), of: retired) is FirebaseError)
        #expect(database.failure(PSQLError.uncleanShutdown, of: retired) is PSQLError)
    }

    @Test("freed memory is trimmed every 30 s unless TESSERA_HEAP_TRIM_INTERVAL says otherwise; 0 is never")
    func heapTrimInterval() throws {
        let base = [
            "DATABASE_URL": "postgres://u:p@db:5433/tessera", "TESSERA_ADMIN_TOKEN": strongTestSecret,
            "TESSERA_INTERNAL_SECRET": strongTestSecret,
        ]
        func interval(_ value: String?) throws -> Duration {
            var env = base
            env["TESSERA_HEAP_TRIM_INTERVAL"] = value
            return try DirectoryConfiguration(environment: ConfigReader(env)).heapTrimInterval
        }
        #expect(try interval(nil) == .seconds(30))
        #expect(try interval("5m") == .seconds(300))
        #expect(try interval("0s") == .zero)
        #expect(throws: ConfigError.self) { try interval("often") }
    }

    @Test("the hash isolation settings: thread unless TESSERA_HASH_ISOLATION says process; bad values refused")
    func hashIsolation() throws {
        let base = [
            "DATABASE_URL": "postgres://u:p@db:5433/tessera", "TESSERA_ADMIN_TOKEN": strongTestSecret,
            "TESSERA_INTERNAL_SECRET": strongTestSecret,
        ]
        func configuration(_ settings: [String: String]) throws -> DirectoryConfiguration {
            try DirectoryConfiguration(environment: ConfigReader(base.merging(settings) { $1 }))
        }
        let defaults = try configuration([:])
        #expect(defaults.hashIsolation == .thread && defaults.hashGroupNice == 19 && defaults.hashCgroup == nil)
        let isolated = try configuration([
            "TESSERA_HASH_ISOLATION": "process", "TESSERA_HASH_GROUP_NICE": "10",
            "TESSERA_HASH_CGROUP": "/sys/fs/cgroup/tessera-hash",
        ])
        #expect(isolated.hashIsolation == .process && isolated.hashGroupNice == 10)
        #expect(isolated.hashCgroup == "/sys/fs/cgroup/tessera-hash")
        #expect(throws: ConfigError.self) { try configuration(["TESSERA_HASH_ISOLATION": "container"]) }
        #expect(throws: ConfigError.self) { try configuration(["TESSERA_HASH_GROUP_NICE": "-5"]) }
        #expect(throws: ConfigError.self) {
            try configuration(["TESSERA_HASH_ISOLATION": "process", "TESSERA_HASH_THREADS": "65"])
        }
        #expect(try configuration(["TESSERA_HASH_THREADS": "65"]).hashThreads == 65)
    }

    @Test("a display name cannot end the Subject header or inject SMTP commands")
    func mailSubjectInjection() {
        let attack = "Eve\r\n.\r\nMAIL FROM:<spam@evil.example>\r\nBcc: all@example.com"
        let template = MailTemplate(subject: "Hello %DISPLAY_NAME%", body: "%LINK%")
        let parts = template.render(
            appName: "App", link: "https://x/a", email: "v@example.com", newEmail: nil, displayName: attack)
        #expect(!parts.subject.contains("\r") && !parts.subject.contains("\n"))
        // Even a subject that still holds line breaks is written as one encoded header line.
        let text = MailFormat.render(
            MailMessage(to: "v@example.com", subject: "Hello " + attack, body: "b"), from: "noreply@example.com")
        let headers = text.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n")
        #expect(headers.count == 8, "\(headers)")
        #expect(headers.contains { $0.hasPrefix("Subject: =?UTF-8?B?") })
        #expect(!text.components(separatedBy: "\r\n").contains { $0 == "." || $0.hasPrefix("MAIL FROM") })
        let plain = MailFormat.render(
            MailMessage(to: "v@example.com", subject: "Plain subject", body: "b"), from: "noreply@example.com")
        #expect(plain.contains("\r\nSubject: Plain subject\r\n"))
    }

    @Test("update masks expand parents to leaves and refuse unknown paths")
    func updateMasks() throws {
        let known = Array(TenantWire.fields.keys)
        #expect(
            try UpdateMask.resolve("client.permissions", known: known)
                == ["client.permissions.disabledUserDeletion", "client.permissions.disabledUserSignup"])
        #expect(
            try UpdateMask.resolve("enableAnonymousUser, displayName", known: known) == [
                "enableAnonymousUser", "displayName",
            ])
        #expect(throws: FirebaseError.self) { try UpdateMask.resolve("nonsense", known: known) }
        #expect(throws: FirebaseError.self) { try UpdateMask.resolve("client.perm", known: known) }
        // Tenants and the Config ignore them (the emulator's config:28 and tenant:292).
        #expect(
            try UpdateMask.resolve("nonsense,displayName.0,displayName", known: known, ignoringUnknown: true) == [
                "displayName"
            ])
    }

    @Test("a masked field absent from the body is reset; unlisted fields are kept")
    func maskSemantics() throws {
        var settings = ScopeSettings(
            scope: Scope(wire: "t"), displayName: "Tenant", enableAnonymousUser: true, disableAuth: true)
        let input = TenantWire(ScopeSettings(scope: Scope(wire: "x"), disabledUserSignup: true), projectID: "p")
        var partial = input
        partial.enableAnonymousUser = nil
        for path in try UpdateMask.resolve(
            "enableAnonymousUser,client.permissions.disabledUserSignup", known: TenantWire.fields.keys)
        {
            TenantWire.fields[path]?(&settings, partial)
        }
        #expect(!settings.enableAnonymousUser && settings.disabledUserSignup && settings.disableAuth)
    }

    @Test("tenant display names follow the Identity Platform rule")
    func displayNames() {
        for good in ["abcd", "Tenant-1", "a2345678901234567890"] {
            #expect(throws: Never.self) { try TenantController<PostgresTenantStore>.validateDisplayName(good) }
        }
        for bad in ["abc", "1abc", "a_bc", "a bcd", "a23456789012345678901", "ténant"] {
            #expect(throws: FirebaseError.self) {
                try TenantController<PostgresTenantStore>.validateDisplayName(bad)
            }
        }
        let id = TenantController<PostgresTenantStore>.newTenantID(displayName: "My-Tenant")
        #expect(id.hasPrefix("my-tenant-") && id.count == "my-tenant-".count + 5)
    }
}

@Suite("the owner token")
struct OwnerTokenScopeTests {
    @Test("the owner token scope is project or tenants/<id>")
    func ownerScope() {
        #expect(Owner(setting: "project") == .project)
        #expect(Owner(setting: "tenants/t-1") == .tenant(Scope(wire: "t-1")))
        #expect(Owner(setting: "tenants/t-1")?.setting == "tenants/t-1")
        for bad in ["", "owner", "tenants/", "tenants/a/b", "projects/p"] { #expect(Owner(setting: bad) == nil) }
    }
}

/// A secret the services accept (64 hex digits: 256 bits), for tests that read a whole configuration.
let strongTestSecret = String(repeating: "0123456789abcdef", count: 4)
