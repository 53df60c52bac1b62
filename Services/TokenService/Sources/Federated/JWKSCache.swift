import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import TesseraShared
import _CryptoExtras

/// A key an identity provider signs its ID tokens with.
enum ProviderKey: Sendable {
    case rsa(_RSA.Signing.PublicKey)
    case p256(P256.Signing.PublicKey)
}

/// Calls to identity providers: bounded time and size, no redirects. A provider that cannot be
/// reached is a dependency that is down (503); an answer it gives is the caller's to judge. URLs a
/// tenant wrote (an OIDC issuer and the keys URL its discovery names) are `guarded`: they go only
/// where `egress` permits, to the address it checked.
struct ProviderHTTP: Sendable {
    let client: HTTPClient
    /// The shared client's configuration, for the one-request clients of guarded calls.
    let configuration: HTTPClient.Configuration
    let timeout: TimeAmount
    let egress: EgressPolicy

    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    func get(_ url: String, headers: [(String, String)] = [], guarded: Bool = false, logger: Logger) async throws
        -> Answer
    {
        try await send(.GET, url, headers: headers, body: nil, guarded: guarded, logger: logger)
    }

    /// A POST of a JSON body.
    func post(_ url: String, json: Data, headers: [(String, String)] = [], logger: Logger) async throws -> Answer {
        try await send(
            .POST, url, headers: headers + [("Content-Type", "application/json")], body: json, guarded: false,
            logger: logger)
    }

    /// A POST of a form (a token endpoint's request).
    func post(
        _ url: String, form: [(String, String)], headers: [(String, String)] = [], guarded: Bool = false,
        logger: Logger
    ) async throws -> Answer {
        try await send(
            .POST, url, headers: headers + [("Content-Type", "application/x-www-form-urlencoded")],
            body: Data(FormURLEncoded.encode(form).utf8), guarded: guarded, logger: logger)
    }

    private func send(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)], body: Data?, guarded: Bool, logger: Logger
    ) async throws -> Answer {
        guard guarded else {
            return try await send(method, url, headers: headers, body: body, client: client, logger: logger)
        }
        guard let target = WebURL(url) else {
            throw IdentityProviders.invalid("The identity provider's address is not an http(s) URL.")
        }
        let address = try await egress.address(for: target, logger: logger)
        guard case .domain(let name) = target.host else {
            return try await send(
                method, target.description, headers: headers, body: body, client: client, logger: logger)
        }
        // The name was resolved and checked: this request's client connects to that address only
        // (TLS still verifies the name), so a second lookup cannot answer something else.
        var pinned = configuration
        pinned.dnsOverride = [name: address]
        let oneShot = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: pinned)
        let result: Result<Answer, any Error>
        do {
            result = .success(
                try await send(
                    method, target.description, headers: headers, body: body, client: oneShot, logger: logger))
        } catch {
            result = .failure(error)
        }
        try? await oneShot.shutdown()
        return try result.get()
    }

    private func send(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)], body: Data?, client: HTTPClient,
        logger: Logger
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Tessera")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        do {
            let response = try await client.execute(request, timeout: timeout)
            let body = try await response.body.collect(upTo: 1 << 20)
            return Answer(
                status: Int(response.status.code), headers: response.headers, body: Data(body.readableBytesView))
        } catch {
            // The URL may carry a token (Facebook's access_token): log only where it points.
            let host = WebURL(url)?.hostString ?? "?"
            logger.warning(
                "identity provider unreachable", metadata: ["idp.host": .string(host), "error": "\(type(of: error))"])
            throw FirebaseError.unavailable("The identity provider could not be reached; retry shortly.")
        }
    }

    /// `max-age` of a `Cache-Control` header, if any.
    static func maxAge(_ headers: HTTPHeaders) -> Int? {
        for value in headers["Cache-Control"] {
            for directive in value.split(separator: ",") {
                let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int(parts[1]) { return seconds }
            }
        }
        return nil
    }
}

/// Provider key sets, cached per URL for the time their `Cache-Control: max-age` allows (an hour
/// when they do not say; at most a day; past that, still used while a refresh fails). A `kid` the cached set lacks triggers one refetch — at most
/// one per `refetchInterval` per URL, so forged tokens cannot turn Tessera into a request pump.
/// Concurrent fetches of one URL are coalesced. OIDC discovery documents are cached the same way.
actor JWKSCache {
    struct Entry {
        var keys: [String: ProviderKey]
        var fetchedAt: ContinuousClock.Instant
        var expiresAt: ContinuousClock.Instant
    }

    let http: ProviderHTTP
    let refetchInterval: Duration
    let clock = ContinuousClock()
    var entries: [String: Entry] = [:]
    var inFlight: [String: Task<Entry, any Error>] = [:]
    var discoveries: [String: (document: Discovery, expiresAt: ContinuousClock.Instant)] = [:]
    /// How many times each URL was fetched (for logs and tests).
    private(set) var fetches: [String: Int] = [:]

    static let defaultLifetime: Duration = .seconds(3600)
    static let maximumLifetime: Duration = .seconds(86400)

    init(http: ProviderHTTP, refetchInterval: Duration) {
        self.http = http
        self.refetchInterval = refetchInterval
    }

    /// The key `kid` of the set at `url`, fetching or refetching the set as needed; nil if the
    /// provider does not publish it.
    /// `guarded`: the URL is a tenant's (`ProviderHTTP`).
    func key(url: String, kid: String, guarded: Bool, logger: Logger) async throws -> ProviderKey? {
        let now = clock.now
        if let entry = entries[url], entry.expiresAt > now {
            if let key = entry.keys[kid] { return key }
            guard entry.fetchedAt + refetchInterval <= now else { return nil }
        }
        do {
            return try await fetch(url, guarded: guarded, logger: logger).keys[kid]
        } catch {
            // A provider whose key endpoint is down keeps working with the keys it last published.
            if let stale = entries[url]?.keys[kid] {
                logger.warning("identity provider keys could not be refreshed; using the last ones fetched")
                return stale
            }
            throw error
        }
    }

    private func fetch(_ url: String, guarded: Bool, logger: Logger) async throws -> Entry {
        if let task = inFlight[url] { return try await task.value }
        let http = self.http
        let clock = self.clock
        let task = Task { () throws -> Entry in
            let answer = try await http.get(url, guarded: guarded, logger: logger)
            guard answer.status == 200 else {
                logger.warning("identity provider JWKS fetch failed", metadata: ["http.status": "\(answer.status)"])
                throw FirebaseError.unavailable("The identity provider's keys could not be fetched; retry shortly.")
            }
            let keys = try Self.parse(answer.body)
            let lifetime = ProviderHTTP.maxAge(answer.headers).map { Duration.seconds($0) } ?? Self.defaultLifetime
            let fetchedAt = clock.now
            return Entry(keys: keys, fetchedAt: fetchedAt, expiresAt: fetchedAt + min(lifetime, Self.maximumLifetime))
        }
        inFlight[url] = task
        defer { inFlight[url] = nil }
        let entry = try await task.value
        entries[url] = entry
        fetches[url, default: 0] += 1
        logger.info("identity provider keys fetched", metadata: ["jwks.keys": "\(entry.keys.count)"])
        return entry
    }

    /// What an OIDC issuer's discovery document says: where its keys are, and where its
    /// authorization flow runs.
    struct Discovery: Sendable {
        var jwksURL: String
        var authorizationURL: String?
        var tokenURL: String?
        /// `token_endpoint_auth_methods_supported` (absent: `client_secret_basic`, OIDC's default).
        var tokenAuthMethods: [String]
    }

    /// The `jwks_uri` of an OIDC issuer's discovery document.
    func jwksURL(issuer: String, logger: Logger) async throws -> String {
        try await discovery(issuer: issuer, logger: logger).jwksURL
    }

    /// An OIDC issuer's discovery document. Both it and the URLs it names are the tenant's: fetched
    /// guarded (`ProviderHTTP`), and every URL it names must be https (or http to an address the
    /// operator allowed, as development setups have).
    func discovery(issuer: String, logger: Logger) async throws -> Discovery {
        if let cached = discoveries[issuer], cached.expiresAt > clock.now { return cached.document }
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        let answer = try await http.get(base + "/.well-known/openid-configuration", guarded: true, logger: logger)
        struct Document: Decodable {
            var issuer: String?
            var jwks_uri: String?
            var authorization_endpoint: String?
            var token_endpoint: String?
            var token_endpoint_auth_methods_supported: [String]?
        }
        guard answer.status == 200, let document = try? JSONDecoder().decode(Document.self, from: answer.body),
            let jwksURL = document.jwks_uri
        else {
            logger.warning("OIDC discovery failed", metadata: ["http.status": "\(answer.status)"])
            throw FirebaseError.unavailable("The identity provider's discovery document could not be read.")
        }
        func secure(_ raw: String?, _ name: String) async throws -> String? {
            guard let raw else { return nil }
            guard let url = WebURL(raw) else {
                throw IdentityProviders.invalid("The provider's discovery document names an invalid \(name).")
            }
            let plainAllowed = url.scheme == "http" ? await http.egress.allowsPlainHTTP(url) : false
            guard url.scheme == "https" || plainAllowed else {
                logger.warning(
                    "OIDC discovery names a URL that is not https",
                    metadata: ["idp.host": .string(url.hostString), "oidc.field": .string(name)])
                throw IdentityProviders.invalid("The provider's discovery document names a \(name) that is not https.")
            }
            return url.description
        }
        let result = Discovery(
            jwksURL: try await secure(jwksURL, "jwks_uri") ?? jwksURL,
            authorizationURL: try await secure(document.authorization_endpoint, "authorization_endpoint"),
            tokenURL: try await secure(document.token_endpoint, "token_endpoint"),
            tokenAuthMethods: document.token_endpoint_auth_methods_supported ?? ["client_secret_basic"])
        let lifetime = ProviderHTTP.maxAge(answer.headers).map { Duration.seconds($0) } ?? Self.defaultLifetime
        discoveries[issuer] = (result, clock.now + min(lifetime, Self.maximumLifetime))
        return result
    }

    struct JWK: Decodable {
        var kty: String
        var kid: String?
        var use: String?
        var n: String?
        var e: String?
        var crv: String?
        var x: String?
        var y: String?
    }

    struct JWKSet: Decodable {
        var keys: [JWK]
    }

    /// RSA and P-256 signing keys of a JWKS; other keys are skipped.
    static func parse(_ data: Data) throws -> [String: ProviderKey] {
        guard let set = try? JSONDecoder().decode(JWKSet.self, from: data) else {
            throw FirebaseError.unavailable("The identity provider published an unreadable key set.")
        }
        var keys: [String: ProviderKey] = [:]
        for jwk in set.keys where jwk.use == nil || jwk.use == "sig" {
            guard let kid = jwk.kid else { continue }
            switch jwk.kty {
            case "RSA":
                if let n = jwk.n.flatMap(Base64URL.decode), let e = jwk.e.flatMap(Base64URL.decode),
                    let key = try? _RSA.Signing.PublicKey(n: n, e: e)
                {
                    keys[kid] = .rsa(key)
                }
            case "EC" where jwk.crv == "P-256":
                if let x = jwk.x.flatMap(Base64URL.decode), let y = jwk.y.flatMap(Base64URL.decode), x.count == 32,
                    y.count == 32, let key = try? P256.Signing.PublicKey(rawRepresentation: x + y)
                {
                    keys[kid] = .p256(key)
                }
            default: continue
            }
        }
        return keys
    }
}
