import Foundation
import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import TesseraConsole
import TesseraShared

public struct DirectoryConfiguration: Sendable {
    public var hostname: String
    public var port: Int
    /// Hummingbird's own request metrics (`TESSERA_HTTP_LIBRARY_METRICS`; ServiceMetrics.addLibraryRequestMetrics).
    public var libraryRequestMetrics = false
    public var projectID: String
    public var adminToken: String
    /// Where `Bearer owner` (the Admin SDKs' emulator-mode token) acts; nil: refused
    /// (docs/protocol/admin.md#the-admin-plane).
    public var ownerTokenScope: Owner?
    public var internalSecret: String
    public var database: DatabaseTarget
    public var anonymousRetention: Duration
    public var autoMigrate: Bool
    /// Firebase-scrypt parameters for new hashes (Firebase's own: rounds 8, mem_cost 14). Tests may
    /// set cheaper ones explicitly; each hash records its own parameters.
    public var passwordHashRounds: Int = 8
    public var passwordHashMemCost: Int = 14
    /// Threads that hash, and how many more hashes may wait before callers get a 503.
    public var hashThreads: Int = System.coreCount
    public var hashQueue: Int = 64
    public var hashMaxWait: Duration = .seconds(2)
    public var hashPriority: ThreadPriority = .idle
    public var hashCrowdedShare: Double = 0.2
    public var hashInteractiveMaxWait: Duration = .milliseconds(500)
    /// Where the hashes run (`TESSERA_HASH_ISOLATION`): the pool's threads, or a child process whose
    /// scheduling group runs at `hashGroupNice` or that joins the cgroup `hashCgroup`.
    public var hashIsolation: HashIsolation = .thread
    public var hashGroupNice = 19
    public var hashCgroup: String?
    /// How often freed memory is given back to the system (`HeapTrim`); zero: never.
    public var heapTrimInterval: Duration = .seconds(30)
    /// Who the admin caller is behind the ingress (`TESSERA_TRUSTED_PROXIES`), for the limit on failed
    /// admin authentication.
    public var clientAddress = ClientAddress.none
    /// Failed admin authentications per client address per hour before every admin call from that
    /// address is refused for the rest of the hour (`TESSERA_ADMIN_AUTH_FAILURES_PER_HOUR`; 0: off).
    public var adminAuthFailuresPerHour = 20
    /// How long the start may wait for PostgreSQL before the service gives up (the schema check).
    public var databaseStartTimeout: Duration = .seconds(30)
    /// Out-of-band codes expire after this long (docs/protocol/accounts.md#email-delivery: 1 hour).
    public var oobCodeTTL: Duration = .seconds(3600)
    public var mail = MailDispatcher.Settings(smtp: nil)
    /// The SMS outbox's sender and its retries (`TESSERA_SMS_*`, docs/configuration.md); no sender: text
    /// messages wait until their codes expire.
    public var sms = SMSDispatcher.Settings(sender: nil)
    /// For links admins ask for (`returnOobLink`): the API key they carry (public), and where they point.
    public var links = ActionLinks(
        actionURL: nil, publicURL: nil, apiKey: "", authorizedDomains: ActionLinks.defaultAuthorizedDomains)
    /// The admin console's sessions end after this long without a request, and this long after sign-in.
    public var consoleIdleTimeout: Duration = .seconds(30 * 60)
    public var consoleSessionLifetime: Duration = .seconds(12 * 3600)
    /// The keys that seal TOTP seeds (`TESSERA_MFA_KEYS`, docs/configuration.md): the first seals,
    /// all open. None: TOTP second factors cannot be enrolled.
    public var mfaKeys: [[UInt8]] = []

    public init(
        hostname: String = "127.0.0.1", port: Int = 8082, projectID: String, adminToken: String,
        internalSecret: String, database: DatabaseTarget,
        anonymousRetention: Duration = .seconds(30 * 86400),
        autoMigrate: Bool = false
    ) {
        self.hostname = hostname
        self.port = port
        self.projectID = projectID
        self.adminToken = adminToken
        self.internalSecret = internalSecret
        self.database = database
        self.anonymousRetention = anonymousRetention
        self.autoMigrate = autoMigrate
    }

    /// `DATABASE_URL` and the pool settings.
    public static func databaseTarget(_ env: ConfigReader) throws -> DatabaseTarget {
        var database = try DatabaseTarget.fromURL(try env.required("DATABASE_URL"))
        try database.applySettings(env)
        return database
    }

    /// Reads the keys documented in docs/configuration.md.
    public init(environment env: ConfigReader) throws {
        self.init(
            hostname: env.string("TESSERA_HTTP_HOST", default: "127.0.0.1"),
            port: try env.int("TESSERA_HTTP_PORT", default: 8082),
            projectID: env.string("TESSERA_PROJECT_ID", default: "tessera-local"),
            adminToken: try env.secret("TESSERA_ADMIN_TOKEN"),
            internalSecret: try env.secret("TESSERA_INTERNAL_SECRET"),
            database: try Self.databaseTarget(env),
            anonymousRetention: try env.duration("CLEANUP_ANONYMOUS_RETENTION", default: .seconds(30 * 86400)),
            autoMigrate: try env.bool("TESSERA_AUTO_MIGRATE", default: false))
        if let scope = env.string("TESSERA_OWNER_TOKEN_SCOPE") {
            guard let parsed = Owner(setting: scope) else {
                throw ConfigError.invalid("TESSERA_OWNER_TOKEN_SCOPE", "expected project or tenants/<tenant id>")
            }
            ownerTokenScope = parsed
        }
        libraryRequestMetrics = try env.bool("TESSERA_HTTP_LIBRARY_METRICS", default: false)
        passwordHashRounds = try env.int("TESSERA_PASSWORD_HASH_ROUNDS", default: passwordHashRounds)
        passwordHashMemCost = try env.int("TESSERA_PASSWORD_HASH_MEM_COST", default: passwordHashMemCost)
        guard (1...8).contains(passwordHashRounds), (1...17).contains(passwordHashMemCost) else {
            throw ConfigError.invalid(
                "TESSERA_PASSWORD_HASH_ROUNDS/_MEM_COST", "rounds must be 1...8 and mem cost 1...17")
        }
        hashThreads = try env.int("TESSERA_HASH_THREADS", default: hashThreads)
        hashQueue = try env.int("TESSERA_HASH_QUEUE", default: hashQueue)
        hashMaxWait = try env.duration("TESSERA_HASH_MAX_WAIT", default: hashMaxWait)
        hashCrowdedShare = try env.double("TESSERA_HASH_CROWDED_SHARE", default: hashCrowdedShare)
        hashInteractiveMaxWait = try env.duration("TESSERA_HASH_BUSY_MAX_WAIT", default: hashInteractiveMaxWait)
        guard hashCrowdedShare > 0, hashCrowdedShare <= 1 else {
            throw ConfigError.invalid("TESSERA_HASH_CROWDED_SHARE", "expected a number above 0 and at most 1")
        }
        if let priority = env.string("TESSERA_HASH_PRIORITY") {
            guard let value = ThreadPriority(rawValue: priority) else {
                throw ConfigError.invalid("TESSERA_HASH_PRIORITY", "expected normal, low or idle")
            }
            hashPriority = value
        }
        if let isolation = env.string("TESSERA_HASH_ISOLATION") {
            guard let value = HashIsolation(rawValue: isolation) else {
                throw ConfigError.invalid("TESSERA_HASH_ISOLATION", "expected thread or process")
            }
            hashIsolation = value
        }
        if hashIsolation == .process, !(1...64).contains(hashThreads) {
            throw ConfigError.invalid("TESSERA_HASH_THREADS", "expected 1 to 64 with TESSERA_HASH_ISOLATION=process")
        }
        hashGroupNice = try env.int("TESSERA_HASH_GROUP_NICE", default: hashGroupNice)
        guard (0...19).contains(hashGroupNice) else {
            throw ConfigError.invalid("TESSERA_HASH_GROUP_NICE", "expected 0 to 19")
        }
        hashCgroup = env.string("TESSERA_HASH_CGROUP").flatMap { $0.isEmpty ? nil : $0 }
        heapTrimInterval = try env.duration("TESSERA_HEAP_TRIM_INTERVAL", default: heapTrimInterval)
        oobCodeTTL = try env.duration("TESSERA_OOB_CODE_TTL", default: oobCodeTTL)
        databaseStartTimeout = try env.duration("TESSERA_DATABASE_START_TIMEOUT", default: databaseStartTimeout)
        if let proxies = env.string("TESSERA_TRUSTED_PROXIES") { clientAddress = try ClientAddress(parsing: proxies) }
        adminAuthFailuresPerHour = try env.int(
            "TESSERA_ADMIN_AUTH_FAILURES_PER_HOUR", default: adminAuthFailuresPerHour)
        if let url = env.string("SMTP_URL") {
            mail.smtp = try SMTPConfiguration(
                url: url, from: env.string("SMTP_FROM", default: "noreply@\(projectID).tessera.local"),
                caFile: env.string("SMTP_CA_FILE"))
        }
        mail.retryBase = try env.duration("SMTP_RETRY_BASE", default: mail.retryBase)
        mail.retryMax = try env.duration("SMTP_RETRY_MAX", default: mail.retryMax)
        mail.giveUpAfter = try env.duration("SMTP_GIVE_UP_AFTER", default: mail.giveUpAfter)
        mail.pollInterval = try env.duration("SMTP_POLL_INTERVAL", default: mail.pollInterval)
        sms = try SMSDispatcher.Settings(environment: env)
        consoleIdleTimeout = try env.duration("TESSERA_CONSOLE_IDLE_TIMEOUT", default: consoleIdleTimeout)
        consoleSessionLifetime = try env.duration("TESSERA_CONSOLE_SESSION_LIFETIME", default: consoleSessionLifetime)
        if let keys = try env.secretText("TESSERA_MFA_KEYS") { mfaKeys = try SecretSealer.parseKeys(keys) }
        links = ActionLinks(
            actionURL: env.string("TESSERA_ACTION_URL"), publicURL: env.string("TESSERA_PUBLIC_URL"),
            apiKey: env.string("TESSERA_API_KEY", default: ""),
            authorizedDomains: ActionLinks.authorizedDomains(from: env.string("TESSERA_AUTHORIZED_DOMAINS")))
    }
}

/// Builds the user-directory: the router over the PostgreSQL repositories, with the PostgreSQL
/// client as a service that runs before the HTTP server. The schema is checked before serving.
public func buildDirectoryApplication(
    configuration: DirectoryConfiguration, logger: Logger
) async throws -> some ApplicationProtocol {
    let metrics = ServiceMetrics()
    metrics.collectLibraryMetrics()
    let client = Database(target: configuration.database, logger: logger, metrics: metrics)
    configuration.links.logSetting(to: logger)
    // With a worker process the pool's threads only wait for its answers: they keep normal priority, so
    // that a finished hash is handed back at once on a busy host; the worker's threads take the
    // configured one.
    let hashing = HashingPool(
        threads: configuration.hashThreads, queueLength: configuration.hashQueue, maxWait: configuration.hashMaxWait,
        priority: configuration.hashIsolation == .process ? .normal : configuration.hashPriority,
        crowdedShare: configuration.hashCrowdedShare,
        interactiveMaxWait: configuration.hashInteractiveMaxWait, metrics: metrics, logger: logger)
    let worker: HashWorker?
    switch configuration.hashIsolation {
    case .thread:
        worker = nil
    case .process:
        let process = HashWorker(
            channels: configuration.hashThreads, groupNice: configuration.hashGroupNice,
            cgroup: configuration.hashCgroup, priority: configuration.hashPriority, metrics: metrics, logger: logger)
        try process.start()
        worker = process
    }
    let hasher = PasswordHasher(
        pool: hashing, rounds: configuration.passwordHashRounds, memCost: configuration.passwordHashMemCost,
        worker: worker)
    let accounts = Accounts(
        client: client, anonymousRetention: configuration.anonymousRetention, hasher: hasher,
        oobCodeTTL: configuration.oobCodeTTL, mfaKeys: configuration.mfaKeys, metrics: metrics)
    if configuration.mfaKeys.isEmpty {
        logger.notice("TESSERA_MFA_KEYS is not set: TOTP second factors cannot be enrolled")
    }
    if let scope = configuration.ownerTokenScope {
        logger.warning(
            "TESSERA_OWNER_TOKEN_SCOPE is set: the Admin SDKs' emulator-mode token `Bearer owner` is accepted on the admin plane; every such call is audited as owner",
            metadata: ["owner.scope": .string(scope.setting)])
    }
    let router = try buildRouter(
        configuration: configuration, client: client, accounts: accounts, hashing: hashing, metrics: metrics)

    let migrations = MigrationRunner(client: client)
    let sms = try configuration.sms.makeSender(logger: logger)
    var services: [any Service] = [
        client, HashingPoolService(pool: hashing, worker: worker, logger: logger),
        MailDispatcher(client: client, settings: configuration.mail, logger: logger, metrics: metrics),
    ]
    // The SMS senders' HTTP client before the dispatcher: services stop in reverse order, so the
    // client is shut down after the dispatcher's last send.
    if let http = sms.http { services.append(HTTPClientService(client: http, logger: logger)) }
    services += [
        SMSDispatcher(
            client: client, settings: configuration.sms, sender: sms.sender, logger: logger, metrics: metrics),
        HeapTrim.service(every: configuration.heapTrimInterval, logger: logger),
    ]
    var app = Application(
        router: router,
        configuration: .init(address: .hostname(configuration.hostname, port: configuration.port), serverName: nil),
        services: services,
        logger: logger)
    app.beforeServerStarts {
        try await checkSchema(client: client, migrations: migrations, configuration: configuration, logger: logger)
    }
    return app
}

/// The directory's router: the middlewares every request passes, health and metrics, then the
/// internal API, the admin console and the admin API (`DirectoryRoutes`).
func buildRouter(
    configuration: DirectoryConfiguration, client: Database, accounts: Accounts, hashing: HashingPool,
    metrics: ServiceMetrics
) throws -> Router<DirectoryContext> {
    let router = Router(context: DirectoryContext.self)
    router.addTracingMiddleware()
    metrics.addLibraryRequestMetrics(to: router, if: configuration.libraryRequestMetrics)
    router.add(middleware: FirebaseErrorMiddleware<DirectoryContext>(metrics: metrics))
    router.add(
        middleware: DatabaseErrorMiddleware<DirectoryContext>(
            unavailable: metrics.counter(
                "db_unavailable", help: "Requests answered 503 because PostgreSQL was unreachable or failing over.")))
    router.add(middleware: RequestCountMiddleware<DirectoryContext>(pool: hashing))

    router.get("/healthz") { _, _ in JSONResponse(HealthStatus()) }
    metrics.addRoute(to: router)
    router.get("/readyz") { _, context in
        do {
            try await client.query("SELECT 1", logger: context.logger)
        } catch {
            throw FirebaseError.unavailable("PostgreSQL is unreachable.")
        }
        return JSONResponse(HealthStatus())
    }

    let routes = DirectoryRoutes(configuration: configuration, client: client, accounts: accounts)
    routes.addInternalRoutes(to: router)
    try routes.addConsoleRoutes(to: router)
    routes.addAdminRoutes(to: router)

    router.addRouteTable(internalSecret: configuration.internalSecret)
    return router
}

/// The directory's routes behind the health checks, and the stores more than one group of them
/// shares: the internal API, the admin console, and the admin API under each prefix.
struct DirectoryRoutes: Sendable {
    let configuration: DirectoryConfiguration
    let client: Database
    let accounts: Accounts
    let tenants: PostgresTenantStore
    let domains: AuthorizedDomains
    let cleanup: CleanupStore
    let credentials: AdminCredentialStore
    let adminFailures: AdminAuthFailures
    let serviceAccounts: ServiceAccountController

    init(configuration: DirectoryConfiguration, client: Database, accounts: Accounts) {
        self.configuration = configuration
        self.client = client
        self.accounts = accounts
        tenants = PostgresTenantStore(client: client, anonymousRetention: configuration.anonymousRetention)
        domains = AuthorizedDomains(client: client, deploymentDefault: configuration.links.authorizedDomains)
        cleanup = CleanupStore(client: client, anonymousRetention: configuration.anonymousRetention)
        credentials = AdminCredentialStore(
            client: client, bootstrapSecret: configuration.adminToken, ownerScope: configuration.ownerTokenScope)
        adminFailures = AdminAuthFailures(
            client: client, clientAddress: configuration.clientAddress, internalSecret: configuration.internalSecret,
            limit: configuration.adminAuthFailuresPerHour)
        serviceAccounts = ServiceAccountController(
            store: ServiceAccountStore(client: client, projectID: configuration.projectID),
            projectID: configuration.projectID)
    }

    /// The internal API: the token service's and the worker's calls, behind the internal secret.
    func addInternalRoutes(to router: Router<DirectoryContext>) {
        let internalGroup = router.internalGroup(secret: configuration.internalSecret)
        InternalController(accounts: accounts, schemaVersion: Migrations.latestVersion).addRoutes(to: internalGroup)
        AuthFlowStore(client: client).addRoutes(to: internalGroup)
        domains.addRoutes(to: internalGroup)
        CleanupInternalController(store: cleanup).addRoutes(to: internalGroup)
        // The token service's privileged endpoints (createSessionCookie) authenticate admins here.
        internalGroup.on(InternalEndpoints.checkAdmin) { body, context in
            guard let bearer = Request.bearerToken(in: body.authorization) else {
                throw FirebaseError.missingCredentials
            }
            // Limited as the admin plane is, against the end user's address the token service resolved.
            let principal = try await adminFailures.authenticate(
                bearer, from: body.clientIP, credentials: credentials, logger: context.logger)
            if let own = principal.owner.tenant, own != body.scope { throw FirebaseError.insufficientPermission }
            return EmptyObject()
        }
    }

    /// The admin console (`/console/`).
    func addConsoleRoutes(to router: Router<DirectoryContext>) throws {
        ConsoleController(
            sessions: ConsoleSessionStore(
                client: client, credentials: credentials, idleTimeout: configuration.consoleIdleTimeout,
                absoluteTimeout: configuration.consoleSessionLifetime),
            credentials: credentials, failures: adminFailures, tenants: tenants, accounts: accounts, cleanup: cleanup,
            mailTemplates: MailTemplateStore(client: client), idpConfigs: IdpConfigStore(client: client),
            serviceAccounts: serviceAccounts, links: configuration.links, domains: domains, views: try ConsoleViews()
        ).addRoutes(to: router)
    }

    /// The admin API under each Identity Toolkit prefix.
    func addAdminRoutes(to router: Router<DirectoryContext>) {
        for prefix in identityToolkitPrefixes {
            // Authenticated once, then every handler gets an AdminContext; writes are audited on the way out.
            let admin = router.group(RouterPath(prefix.isEmpty ? "/" : prefix)).add(
                middleware: AdminAuthMiddleware(
                    credentials: credentials, projectID: configuration.projectID,
                    failures: adminFailures, tenants: tenants)
            ).group(context: AdminContext.self).add(middleware: AdminAuditMiddleware(credentials: credentials))
            AdminCredentialController(store: credentials, projectID: configuration.projectID)
                .addRoutes(to: admin)
            TenantController(
                store: tenants, projectID: configuration.projectID,
                defaultDomains: configuration.links.authorizedDomains
            ) { scope, logger in
                let config = try await accounts.admin.hashConfig(scope: scope, logger: logger)
                return ProjectConfigWire.HashConfigWire(
                    algorithm: "SCRYPT", signerKey: config.signerKey, saltSeparator: config.saltSeparator,
                    rounds: config.rounds, memoryCost: config.memCost)
            }.addRoutes(to: admin)
            let adminAccounts = AdminAccountsController(accounts: accounts, tenants: tenants)
            adminAccounts.addRoutes(to: admin)
            ImportController(accounts: accounts, tenants: tenants).addRoutes(to: admin)
            QueryController(accounts: accounts, tenants: tenants).addRoutes(to: admin)
            AdminOobController(accounts: accounts, tenants: tenants, links: configuration.links, domains: domains)
                .addRoutes(to: admin)
            MailTemplateController(store: MailTemplateStore(client: client)).addRoutes(to: admin)
            CleanupController(store: cleanup, tenants: tenants).addRoutes(to: admin)
            IdpConfigController(store: IdpConfigStore(client: client), projectID: configuration.projectID)
                .addRoutes(to: admin)
            serviceAccounts.addRoutes(to: admin)
        }
    }
}

/// Before the server starts: waits for a writable primary, applies the migrations if
/// `TESSERA_AUTO_MIGRATE` is on, and checks the schema, each within the start timeout.
func checkSchema(
    client: Database, migrations: MigrationRunner, configuration: DirectoryConfiguration, logger: Logger
) async throws {
    do {
        try await client.waitForPrimary(within: configuration.databaseStartTimeout)
    } catch is DeadlineExceeded {
        throw DatabaseURLError.unusable(
            "no server of DATABASE_URL took writes within \(configuration.databaseStartTimeout)")
    }
    if configuration.autoMigrate {
        try await migrations.migrate(logger: logger)
    }
    let version: Int
    do {
        version = try await withDeadline(configuration.databaseStartTimeout) {
            try await migrations.check(logger: logger)
        }
    } catch is DeadlineExceeded {
        // The pool keeps retrying a connection it cannot make; a service that cannot reach its
        // database stops instead of waiting for ever, and its log says why at each attempt.
        throw DatabaseURLError.unusable(
            "no connection within \(configuration.databaseStartTimeout); the log's \"Connection creation failed\" "
                + "lines give the cause, e.g. a TLS certificate that does not verify")
    } catch let error as PSQLError {
        // Its description is generic on purpose; the code and the cause (a TLS certificate that
        // does not verify, a refused connection) are what the operator needs, with the setting.
        throw DatabaseURLError.unusable("\(error.code)" + (error.underlying.map { ": \($0)" } ?? ""))
    }
    logger.info("schema checked", metadata: ["schema.version": "\(version)"])
}

/// Applies pending migrations and returns (the `migrate` command), on the writable primary when
/// `DATABASE_URL` lists several servers.
public func runMigrations(
    configuration: DatabaseTarget, startTimeout: Duration = .seconds(30), logger: Logger
) async throws -> [Int] {
    let client = Database(target: configuration, logger: logger)
    return try await withThrowingTaskGroup(of: [Int]?.self) { group in
        group.addTask {
            try await client.run()
            return nil
        }
        defer { group.cancelAll() }
        do {
            try await client.waitForPrimary(within: startTimeout)
        } catch is DeadlineExceeded {
            throw DatabaseURLError.unusable("no server of DATABASE_URL took writes within \(startTimeout)")
        }
        return try await MigrationRunner(client: client).migrate(logger: logger)
    }
}

struct DeadlineExceeded: Error {}

/// `body`'s result, or `DeadlineExceeded` once `limit` has passed (`body` is then cancelled).
func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw DeadlineExceeded()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw DeadlineExceeded() }
        return first
    }
}
