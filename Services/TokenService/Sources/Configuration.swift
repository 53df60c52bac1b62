import Crypto
import Foundation
import TesseraShared

public struct TokenServiceConfiguration: Sendable {
    public var hostname: String = "127.0.0.1"
    public var port: Int = 8081
    /// Hummingbird's own request metrics (`TESSERA_HTTP_LIBRARY_METRICS`; ServiceMetrics.addLibraryRequestMetrics).
    public var libraryRequestMetrics = false
    /// A second listener for the admin plane (`TESSERA_ADMIN_HTTP_PORT`): when set, the main port
    /// believes no admin bearer, and admin-plane paths must come through this one (Kubernetes).
    public var adminPort: Int?
    public var projectID: String
    public var projectNumber: String
    public var apiKey: String
    public var directoryURL: String = "http://127.0.0.1:8082"
    public var internalSecret: String
    public var signingKeysDirectory: String
    /// Session cookies' own keys (issue #23; Firebase publishes them apart from ID tokens' keys):
    /// `TESSERA_SESSION_COOKIE_KEYS_DIR`, by default `session-cookies/` in the signing key directory.
    public var sessionCookieKeysDirectory: String
    public var publicURL: String?
    public var refreshGrace: Duration = .seconds(10)
    public var refreshIdleTTL: Duration = .seconds(30 * 86400)
    public var refreshAbsoluteTTL: Duration = .seconds(180 * 86400)
    public var reauthWindow: Duration = .seconds(300)
    public var keyReloadInterval: Duration = .seconds(60)
    public var internalTimeout: Duration = .seconds(5)
    public var internalConnectTimeout: Duration = .seconds(1)
    /// After the directory refused a client's password sign-in or sign-up with 503, the token service
    /// refuses that address's next ones itself for this long (`PasswordGate`); zero: never.
    public var passwordRefusalWindow: Duration = .milliseconds(100)
    /// The page that handles out-of-band links (`?mode=…&oobCode=…`); by default
    /// `<public URL>/__/auth/action`, Firebase's path.
    public var actionURL: String?
    /// Hosts a `continueUrl` may point to.
    public var authorizedDomains: [String] = ActionLinks.defaultAuthorizedDomains
    /// Built-in identity providers' endpoints (docs/protocol/federated.md#federated-providers;
    /// `IDP_<NAME>_ISSUER`, `_JWKS_URL`, `_USERINFO_URL`).
    public var providerEndpoints = ProviderEndpoints.defaults
    /// A provider token with an unknown key id refetches the provider's JWKS at most this often.
    public var idpJWKSRefetchInterval: Duration = .seconds(30)
    /// Proxies whose `X-Forwarded-For` is believed when finding the end user's address (rate limits).
    public var clientAddress = ClientAddress.none
    /// Private addresses tenants' identity providers may nonetheless be reached at (development).
    var egress = EgressPolicy.open
    /// Time allowed for one request to an identity provider.
    public var idpTimeout: Duration = .seconds(5)
    /// How long a sign-in started with a provider (`createAuthUri`, the hosted handler) can be
    /// finished (`TESSERA_IDP_FLOW_TTL`).
    public var idpFlowTTL: Duration = .seconds(600)
    /// iOS bundle ids and Android package names that may sign in through the hosted handler
    /// (`TESSERA_AUTHORIZED_APPS`): the provider's answer goes to the app that claims the scheme.
    public var authorizedApps: [String] = []
    /// The operator's reCAPTCHA v2 keys; nil: no app verification (docs/protocol/phone.md#app-verification).
    public var recaptcha: RecaptchaSettings?

    var links: ActionLinks {
        ActionLinks(actionURL: actionURL, publicURL: publicURL, apiKey: apiKey, authorizedDomains: authorizedDomains)
    }

    public init(
        projectID: String, apiKey: String, internalSecret: String, signingKeysDirectory: String,
        projectNumber: String? = nil
    ) {
        self.projectID = projectID
        self.apiKey = apiKey
        self.internalSecret = internalSecret
        self.signingKeysDirectory = signingKeysDirectory
        self.sessionCookieKeysDirectory = Self.defaultSessionCookieKeysDirectory(signingKeysDirectory)
        self.projectNumber = projectNumber ?? Self.derivedProjectNumber(projectID)
    }

    /// Reads the keys documented in docs/configuration.md.
    public init(environment env: ConfigReader) throws {
        self.init(
            projectID: env.string("TESSERA_PROJECT_ID", default: "tessera-local"),
            apiKey: try env.required("TESSERA_API_KEY"),
            internalSecret: try env.secret("TESSERA_INTERNAL_SECRET"),
            signingKeysDirectory: try env.required("TESSERA_SIGNING_KEYS_DIR"),
            projectNumber: env.string("TESSERA_PROJECT_NUMBER"))
        sessionCookieKeysDirectory = env.string("TESSERA_SESSION_COOKIE_KEYS_DIR", default: sessionCookieKeysDirectory)
        hostname = env.string("TESSERA_HTTP_HOST", default: hostname)
        port = try env.int("TESSERA_HTTP_PORT", default: port)
        libraryRequestMetrics = try env.bool("TESSERA_HTTP_LIBRARY_METRICS", default: false)
        if env.string("TESSERA_ADMIN_HTTP_PORT") != nil {
            adminPort = try env.int("TESSERA_ADMIN_HTTP_PORT", default: 0)
        }
        directoryURL = env.string("TESSERA_DIRECTORY_URL", default: directoryURL)
        publicURL = env.string("TESSERA_PUBLIC_URL")
        refreshGrace = try env.duration("TESSERA_REFRESH_GRACE", default: refreshGrace)
        refreshIdleTTL = try env.duration("TESSERA_REFRESH_IDLE_TTL", default: refreshIdleTTL)
        refreshAbsoluteTTL = try env.duration("TESSERA_REFRESH_ABSOLUTE_TTL", default: refreshAbsoluteTTL)
        reauthWindow = try env.duration("TESSERA_REAUTH_WINDOW", default: reauthWindow)
        keyReloadInterval = try env.duration("TESSERA_KEY_RELOAD_INTERVAL", default: keyReloadInterval)
        internalTimeout = try env.duration("TESSERA_INTERNAL_TIMEOUT", default: internalTimeout)
        internalConnectTimeout = try env.duration("TESSERA_INTERNAL_CONNECT_TIMEOUT", default: internalConnectTimeout)
        passwordRefusalWindow = try env.duration("TESSERA_PASSWORD_REFUSAL_WINDOW", default: passwordRefusalWindow)
        actionURL = env.string("TESSERA_ACTION_URL")
        providerEndpoints = ProviderEndpoints.resolve(env)
        idpJWKSRefetchInterval = try env.duration("TESSERA_IDP_JWKS_REFETCH_INTERVAL", default: idpJWKSRefetchInterval)
        idpTimeout = try env.duration("TESSERA_IDP_TIMEOUT", default: idpTimeout)
        idpFlowTTL = try env.duration("TESSERA_IDP_FLOW_TTL", default: idpFlowTTL)
        guard idpFlowTTL >= .seconds(30), idpFlowTTL <= .seconds(3600) else {
            throw ConfigError.invalid("TESSERA_IDP_FLOW_TTL", "\(idpFlowTTL) (between 30s and 1h)")
        }
        authorizedApps = (env.string("TESSERA_AUTHORIZED_APPS") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if let proxies = env.string("TESSERA_TRUSTED_PROXIES") {
            clientAddress = try ClientAddress(parsing: proxies)
        }
        if let allowed = env.string("TESSERA_IDP_ALLOWED_PRIVATE_ADDRESSES") {
            egress = try EgressPolicy(parsing: allowed)
        }
        if let domains = env.string("TESSERA_AUTHORIZED_DOMAINS") {
            authorizedDomains = ActionLinks.authorizedDomains(from: domains)
        }
        switch (env.string("TESSERA_RECAPTCHA_SITE_KEY"), try env.secretText("TESSERA_RECAPTCHA_SECRET_KEY")) {
        case (nil, nil):
            recaptcha = nil
        case (let siteKey?, let secretKey?) where !siteKey.isEmpty && !secretKey.isEmpty:
            var settings = RecaptchaSettings(siteKey: siteKey, secretKey: secretKey)
            if let url = env.string("TESSERA_RECAPTCHA_VERIFY_URL") {
                guard let parsed = WebURL(url), ["http", "https"].contains(parsed.scheme) else {
                    throw ConfigError.invalid("TESSERA_RECAPTCHA_VERIFY_URL", "not an http(s) URL")
                }
                settings.verifyURL = url
            }
            recaptcha = settings
        default:
            throw ConfigError.invalid(
                "TESSERA_RECAPTCHA_SITE_KEY", "set it and TESSERA_RECAPTCHA_SECRET_KEY (or _FILE) together, or neither")
        }
    }

    public static func defaultSessionCookieKeysDirectory(_ signingKeysDirectory: String) -> String {
        signingKeysDirectory + "/session-cookies"
    }

    /// A stable 12-digit number from the project id, for deployments that do not set one.
    static func derivedProjectNumber(_ projectID: String) -> String {
        let digest = SHA256.hash(data: Data(projectID.utf8))
        let value = digest.prefix(8).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
        return String(100_000_000_000 + value % 900_000_000_000)
    }
}
