import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import TesseraShared

/// Builds the token service: routes, key store and its reload loop, the directory client.
public func buildTokenApplication(
    configuration: TokenServiceConfiguration, logger: Logger
) throws -> some ApplicationProtocol {
    let (keys, cookieKeys) = try loadKeyStores(configuration: configuration, logger: logger)
    configuration.links.logSetting(to: logger)
    let metrics = ServiceMetrics()
    metrics.collectLibraryMetrics()
    keys.observe(metrics: metrics, set: "id_token")
    cookieKeys.observe(metrics: metrics, set: "session_cookie")
    let httpClient = InternalHTTPClient.make(connectTimeout: configuration.internalConnectTimeout)
    let directory = DirectoryClient(
        httpClient: httpClient, baseURL: configuration.directoryURL, secret: configuration.internalSecret,
        timeout: configuration.internalTimeout, metrics: metrics)
    let issuer = IDTokenIssuer(keys: keys, projectID: configuration.projectID, metrics: metrics)
    // Identity providers (and reCAPTCHA) are outside: their own client (TLS, no redirects), not the internal one.
    var providerClientConfiguration = HTTPClient.Configuration()
    providerClientConfiguration.redirectConfiguration = .disallow
    providerClientConfiguration.timeout = .init(connect: .seconds(2), read: nil)
    providerClientConfiguration.decompression = .disabled
    let providerClient = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: providerClientConfiguration)
    let providerHTTP = ProviderHTTP(
        client: providerClient, configuration: providerClientConfiguration,
        timeout: .milliseconds(Int64(configuration.idpTimeout.timeInterval * 1000)), egress: configuration.egress)
    let tokens = SessionTokens(
        directory: directory, issuer: issuer, configuration: configuration,
        passwordGate: PasswordGate(window: configuration.passwordRefusalWindow, metrics: metrics),
        appVerifier: AppVerifier(recaptcha: configuration.recaptcha, http: providerHTTP))
    let providers = IdentityProviders(
        endpoints: configuration.providerEndpoints,
        keys: JWKSCache(http: providerHTTP, refetchInterval: configuration.idpJWKSRefetchInterval), http: providerHTTP)
    let flows = AuthorizationFlows(
        providers: providers, directory: directory, apiKey: configuration.apiKey, lifetime: configuration.idpFlowTTL)

    /// One router per listener, built alike (`buildRouter`).
    func makeRouter(keepsAuthorization: Bool) -> Router<TokenContext> {
        buildRouter(
            keepsAuthorization: keepsAuthorization, configuration: configuration, metrics: metrics,
            directory: directory, tokens: tokens, providers: providers, flows: flows, keys: keys,
            cookieKeys: cookieKeys)
    }

    var services: [any Service] = [
        HTTPClientService(client: httpClient, logger: logger),
        HTTPClientService(client: providerClient, logger: logger),
        // Re-reads the key directory so that rotation needs no restart.
        PeriodicService(every: configuration.keyReloadInterval) {
            keys.reload(logger: logger)
            cookieKeys.reload(logger: logger)
        },
    ]
    // The admin plane's listener (docs/protocol/admin.md#the-admin-plane): where an ingress that cannot drop
    // a header sends the admin plane's token-service paths (createSessionCookie, the v3 admin rpcs, the
    // privileged form of lookup/update/delete/sendOobCode). The public listener then never believes a bearer.
    if let adminPort = configuration.adminPort {
        services.append(
            Application(
                router: makeRouter(keepsAuthorization: true),
                configuration: .init(address: .hostname(configuration.hostname, port: adminPort), serverName: nil),
                logger: logger))
        logger.info("admin listener", metadata: ["http.admin_port": "\(adminPort)"])
    }
    return Application(
        router: makeRouter(keepsAuthorization: configuration.adminPort == nil),
        configuration: .init(address: .hostname(configuration.hostname, port: configuration.port), serverName: nil),
        services: services,
        logger: logger)
}

/// The ID-token signing keys and the session-cookie keys, each from its directory, logged.
func loadKeyStores(
    configuration: TokenServiceConfiguration, logger: Logger
) throws -> (keys: KeyStore, cookieKeys: KeyStore) {
    let keys = try KeyStore(directory: configuration.signingKeysDirectory)
    logger.info(
        "signing keys loaded",
        metadata: [
            "keys.signer": .string(keys.current.signer.kid), "keys.published": "\(keys.current.keys.map(\.kid))",
        ])
    let cookieKeys: KeyStore
    do {
        cookieKeys = try KeyStore(directory: configuration.sessionCookieKeysDirectory)
    } catch {
        throw KeyDirectoryError.unreadable(
            configuration.sessionCookieKeysDirectory,
            "session cookies are signed with keys of their own (\(error)); create one with `token-service keys generate --session-cookies`"
        )
    }
    logger.info(
        "session cookie keys loaded",
        metadata: [
            "keys.signer": .string(cookieKeys.current.signer.kid),
            "keys.published": "\(cookieKeys.current.keys.map(\.kid))",
        ])
    return (keys, cookieKeys)
}

/// The router of one listener: tracing, CORS and errors for every request, the caller's API key and
/// bearer read for the client routes, then health, metrics and every controller. The public listener
/// of a token service that has an admin listener believes no admin bearer (`keepsAuthorization: false`).
func buildRouter(
    keepsAuthorization: Bool, configuration: TokenServiceConfiguration, metrics: ServiceMetrics,
    directory: DirectoryClient, tokens: SessionTokens, providers: IdentityProviders, flows: AuthorizationFlows,
    keys: KeyStore, cookieKeys: KeyStore
) -> Router<TokenContext> {
    let router = Router(context: TokenContext.self)
    router.addTracingMiddleware()
    metrics.addLibraryRequestMetrics(to: router, if: configuration.libraryRequestMetrics)
    if !keepsAuthorization { router.add(middleware: DropAuthorizationMiddleware()) }
    // CORS outside the error middleware: it sees every answer as a response, errors included, and
    // gives it its headers (inside, it rethrew errors in a wrapper of its own, which became 500s
    // without CORS headers, so a browser saw a network error instead of EMAIL_EXISTS).
    router.add(middleware: FirebaseCORSMiddleware<TokenContext>())
    router.add(middleware: FirebaseErrorMiddleware<TokenContext>(metrics: metrics))
    // The routes whose context says who called; keys, health and the hosted pages skip the reading.
    let clients = router.group().add(middleware: CallerMiddleware(apiKey: configuration.apiKey))

    router.get("/healthz") { _, _ in JSONResponse(HealthStatus()) }
    metrics.addRoute(to: router)
    router.get("/readyz") { _, context in
        _ = try await directory.get(InternalEndpoints.status, requestID: context.requestID, logger: context.logger)
        return JSONResponse(HealthStatus())
    }
    AccountsController(tokens: tokens, flows: flows, configuration: configuration).addRoutes(to: clients)
    FederatedController(tokens: tokens, providers: providers, flows: flows, configuration: configuration)
        .addRoutes(to: clients)
    TokenController(tokens: tokens, configuration: configuration).addRoutes(to: clients)
    OobController(tokens: tokens, configuration: configuration).addRoutes(to: clients)
    SessionCookieController(tokens: tokens, cookieKeys: cookieKeys, configuration: configuration).addRoutes(
        to: router)
    KeysController(keys: keys, cookieKeys: cookieKeys, configuration: configuration).addRoutes(to: router)
    ProjectConfigController(tokens: tokens, configuration: configuration).addRoutes(to: clients)
    LegacyAdminController(tokens: tokens, configuration: configuration).addRoutes(to: router)
    EmailLinkController(tokens: tokens, configuration: configuration).addRoutes(to: clients)
    MultiFactorController(tokens: tokens).addRoutes(to: clients)
    PhoneController(tokens: tokens).addRoutes(to: clients)
    RecaptchaParamsController(verifier: tokens.appVerifier).addRoutes(to: clients)
    ActionPageController(tokens: tokens, configuration: configuration).addRoutes(to: router)
    AuthHandlerController(tokens: tokens, flows: flows, configuration: configuration).addRoutes(to: router)
    OutOfScope.addRoutes(to: router)
    router.addRouteTable(internalSecret: configuration.internalSecret)
    return router
}

/// Features out of scope for now (docs/protocol/README.md#the-surface) answer 501 with a clear message rather than 404.
enum OutOfScope {
    static let clientVerbs = [
        "v2/accounts/passkeyEnrollment:start": "Passkeys",
        "v2/accounts/passkeyEnrollment:finalize": "Passkeys",
        "v2/accounts/passkeySignIn:start": "Passkeys",
        "v2/accounts/passkeySignIn:finalize": "Passkeys",
    ]

    static func addRoutes(to router: Router<TokenContext>) {
        for prefix in identityToolkitPrefixes {
            for (path, feature) in clientVerbs {
                let handler: @Sendable (Request, TokenContext) async throws -> Response = { _, _ in
                    throw FirebaseError.notImplemented(feature)
                }
                router.post(RouterPath("\(prefix)/\(path)"), use: handler)
                router.get(RouterPath("\(prefix)/\(path)"), use: handler)
            }
        }
        router.addLegacyOutOfScope()
    }
}

/// Removes `Authorization` from every request (the public listener of a token service with an admin
/// listener): an admin bearer sent to the public plane is not believed, as the local ingress drops it.
struct DropAuthorizationMiddleware: RouterMiddleware {
    typealias Context = TokenContext

    func handle(_ request: Request, context: TokenContext, next: (Request, TokenContext) async throws -> Response)
        async throws -> Response
    {
        guard request.headers[.authorization] != nil else { return try await next(request, context) }
        var head = request.head
        head.headerFields[.authorization] = nil
        return try await next(Request(head: head, body: request.body), context)
    }
}
