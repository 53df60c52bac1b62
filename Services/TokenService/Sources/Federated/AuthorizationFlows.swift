import Crypto
import Foundation
import Logging
import TesseraShared

/// Server-side authorization flows with identity providers (docs/oauth-flows.md): the start
/// (`createAuthUri` with a `providerId`, the hosted handler) sends the browser to the provider with a
/// single-use `state`; the redemption (`signInWithIdp` with the provider's answer and the
/// `sessionId`) consumes the flow, exchanges the code at the provider and verifies what comes back
/// exactly as a credential an app sends is verified (`IdentityProviders`).
struct AuthorizationFlows: Sendable {
    let providers: IdentityProviders
    let directory: DirectoryClient
    /// The deployment's API key: a flow is bound to the key that started it.
    let apiKey: String
    /// How long a started flow can be redeemed (`TESSERA_IDP_FLOW_TTL`).
    let lifetime: Duration

    /// How a provider's flow runs.
    enum Kind: Equatable {
        /// OAuth 2 code flow with PKCE, then the ID token of the token endpoint's answer.
        case oidcCode
        /// Apple: the code comes back by `form_post`; the client secret is an ES256 JWT.
        case apple
        /// A tenant's OIDC provider configured for ID tokens: the ID token comes back by `form_post`.
        case oidcImplicit
        /// OAuth 2 code flow with PKCE, then the provider's user-info API (Facebook, GitHub).
        case oauth2Code
        /// Twitter's OAuth 1.0a: a request token first, then the access token and its secret.
        case oauth1

        /// The ID token must carry the flow's nonce.
        var usesNonce: Bool { self == .oidcCode || self == .apple || self == .oidcImplicit }
        /// The code is bound to a PKCE verifier (Apple's token endpoint takes none).
        var usesPKCE: Bool { self == .oidcCode || self == .oauth2Code }
        /// The provider posts its answer back (`response_mode=form_post`).
        var postsAnswer: Bool { self == .apple || self == .oidcImplicit }
    }

    static func kind(_ config: IdpConfigResponse) throws -> Kind {
        switch config.providerId {
        case "apple.com": return .apple
        case "facebook.com", "github.com": return .oauth2Code
        case "twitter.com": return .oauth1
        case "google.com", "microsoft.com", "yahoo.com": return .oidcCode
        default:
            guard FederatedProviders.isOIDCProviderID(config.providerId) else {
                throw FirebaseError.invalid(.invalidProviderId)
            }
            return config.responseCode == true ? .oidcCode : .oidcImplicit
        }
    }

    /// What a provider is asked for when the app asks for nothing more.
    static func defaultScopes(_ providerId: String) -> [String] {
        switch providerId {
        case "apple.com": ["name", "email"]
        case "facebook.com": ["email", "public_profile"]
        case "github.com": ["read:user", "user:email"]
        case "twitter.com": []
        default: ["openid", "email", "profile"]
        }
    }

    /// Parameters of the authorization request that the flow itself sets: an app's custom
    /// parameters of these names are ignored, as Firebase documents for `setCustomParameters`.
    static let reservedParameters: Set<String> = [
        "client_id", "client_secret", "redirect_uri", "response_type", "response_mode", "scope", "state", "nonce",
        "code_challenge", "code_challenge_method", "oauth_token", "oauth_callback",
    ]

    // MARK: Start

    struct Start: Sendable {
        var scope: Scope
        var providerId: String
        /// Scopes the app asks for beyond the provider's defaults.
        var scopes: [String] = []
        var customParameters: [String: String] = [:]
        /// Tessera's handler (`<public URL>/__/auth/handler`): the provider's `redirect_uri`.
        var redirectUri: String
        /// What the redeeming `requestUri` must be (see `AuthFlow.continueUri`).
        var continueUri: String
        var sessionHashes: [String]
        var client: AuthFlowClient?
        var clientIP: String?
    }

    /// Starts a flow; returns the provider's authorization URL.
    func start(_ start: Start, requestID: String, logger: Logger) async throws -> String {
        let config = try await directory.call(
            InternalEndpoints.idpConfig, IdpConfigRequest(scope: start.scope, providerId: start.providerId),
            requestID: requestID, logger: logger)
        let kind = try Self.kind(config)
        try Self.checkCredentials(config, kind: kind)
        let state = Self.newState(scope: start.scope)
        var flow = AuthFlow(
            providerId: config.providerId, sessionHashes: start.sessionHashes, apiKeyHash: Self.hexDigest(apiKey),
            continueUri: start.continueUri, redirectUri: start.redirectUri)
        flow.client = start.client
        let custom = start.customParameters.filter { !Self.reservedParameters.contains($0.key.lowercased()) }
        let authorizationURL: String
        if kind == .oauth1 {
            // The state rides on the callback URL: OAuth 1.0a has no state of its own.
            let callback = start.redirectUri + "?state=" + FormURLEncoded.escape(state)
            let (token, secret) = try await requestToken(config, callback: callback, logger: logger)
            flow.requestToken = token
            flow.requestTokenSecret = secret
            guard let base = providers.endpoints[config.providerId]?.authorizationURL else {
                throw FirebaseError.internal
            }
            authorizationURL = Self.url(base, [("oauth_token", token)] + custom.sorted { $0.key < $1.key })
        } else {
            let (base, tokenURL, extra) = try await endpoints(config, custom: custom, logger: logger)
            flow.tokenURL = tokenURL
            var query: [(String, String)] = [
                ("client_id", config.clientId), ("redirect_uri", start.redirectUri),
                ("response_type", kind == .oidcImplicit ? "id_token" : "code"),
                ("scope", Self.scopes(config.providerId, requested: start.scopes)), ("state", state),
            ]
            if kind.usesNonce {
                let nonce = Base64URL.encode(Secrets.randomBytes(24))
                flow.nonce = nonce
                query.append(("nonce", nonce))
            }
            if kind.usesPKCE {
                let verifier = Base64URL.encode(Secrets.randomBytes(32))
                flow.codeVerifier = verifier
                query.append(("code_challenge", Base64URL.encode(Array(SHA256.hash(data: Data(verifier.utf8))))))
                query.append(("code_challenge_method", "S256"))
            }
            if kind.postsAnswer { query.append(("response_mode", "form_post")) }
            authorizationURL = Self.url(base, query + extra.sorted { $0.key < $1.key })
        }
        var create = CreateAuthFlowRequest(
            scope: start.scope, stateHash: Self.hexDigest(state), flow: flow,
            ttlSeconds: Int(lifetime.components.seconds))
        create.clientIP = start.clientIP
        _ = try await directory.call(
            InternalEndpoints.createAuthFlow, create, requestID: requestID, logger: logger)
        return authorizationURL
    }

    /// What the provider's answer will be redeemed with must be configured before the user is sent
    /// there: a code flow's client secret (Twitter's consumer secret), Apple's code-flow key.
    static func checkCredentials(_ config: IdpConfigResponse, kind: Kind) throws {
        switch kind {
        case .apple: _ = try appleCodeFlow(config)
        case .oidcCode, .oauth2Code, .oauth1: _ = try clientSecret(config)
        case .oidcImplicit: break
        }
    }

    /// The provider's client secret (Twitter's consumer secret), or `OPERATION_NOT_ALLOWED`.
    static func clientSecret(_ config: IdpConfigResponse) throws -> String {
        guard let secret = config.clientSecret else {
            throw FirebaseError.invalid(
                .operationNotAllowed, "\(config.providerId) is configured without its client secret (clientSecret).")
        }
        return secret
    }

    /// Apple's code-flow key, or `OPERATION_NOT_ALLOWED`.
    static func appleCodeFlow(_ config: IdpConfigResponse) throws -> AppleCodeFlow {
        guard let flow = config.appleCodeFlow else {
            throw FirebaseError.invalid(
                .operationNotAllowed,
                "apple.com is configured without appleSignInConfig.codeFlowConfig (team id, key id, private key).")
        }
        return flow
    }

    /// The authorization and token endpoints of an OAuth 2 provider, and the custom parameters that
    /// go on to the authorization request (Microsoft's `tenant` fills its endpoints instead).
    func endpoints(_ config: IdpConfigResponse, custom: [String: String], logger: Logger) async throws
        -> (authorization: String, token: String, parameters: [String: String])
    {
        if FederatedProviders.isBuiltIn(config.providerId) {
            guard let endpoints = providers.endpoints[config.providerId],
                var authorization = endpoints.authorizationURL,
                var token = endpoints.tokenURL
            else { throw FirebaseError.internal }
            var parameters = custom
            if config.providerId == "microsoft.com" {
                let tenant = parameters.removeValue(forKey: "tenant") ?? "common"
                guard !tenant.isEmpty, tenant.count <= 64,
                    tenant.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") })
                else {
                    throw FirebaseError.invalid(
                        .invalidIdpResponse, "customParameters.tenant is not a Microsoft tenant.")
                }
                authorization = authorization.replacingOccurrences(of: "{tenant}", with: tenant)
                token = token.replacingOccurrences(of: "{tenant}", with: tenant)
            }
            return (authorization, token, parameters)
        }
        guard let issuer = config.issuer else { throw FirebaseError.invalid(.operationNotAllowed) }
        let discovery = try await providers.keys.discovery(issuer: issuer, logger: logger)
        guard let authorization = discovery.authorizationURL, let token = discovery.tokenURL else {
            throw IdentityProviders.invalid(
                "The provider's discovery document names no authorization_endpoint or token_endpoint.")
        }
        return (authorization, token, custom)
    }

    static func scopes(_ providerId: String, requested: [String]) -> String {
        var all = defaultScopes(providerId)
        for scope in requested where !scope.isEmpty && !all.contains(scope) { all.append(scope) }
        return all.joined(separator: " ")
    }

    /// A state: 256 random bits, then the scope (base64url) after a dot, so the handler that gets the
    /// provider's answer knows which scope to look in.
    static func newState(scope: Scope) -> String {
        let random = Base64URL.encode(Secrets.randomBytes(32))
        guard let tenant = scope.tenantID else { return random }
        return random + "." + Base64URL.encode(Array(tenant.utf8))
    }

    /// The scope a state names; nil for a state Tessera cannot have made.
    static func scope(ofState state: String) -> Scope? {
        let parts = state.split(separator: ".", omittingEmptySubsequences: false)
        guard state.utf8.count <= 512, parts.count <= 2, parts[0].utf8.count == 43 else { return nil }
        guard parts.count == 2 else { return .project }
        guard let tenant = Base64URL.decode(parts[1]), let key = String(bytes: tenant, encoding: .utf8), !key.isEmpty
        else { return nil }
        return Scope(wire: key)
    }

    static func hexDigest(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func url(_ base: String, _ query: [(String, String)]) -> String {
        guard !query.isEmpty else { return base }
        return base + (base.contains("?") ? "&" : "?") + FormURLEncoded.encode(query)
    }

    // MARK: Redeem

    /// The provider's answer as the redeeming call carries it: the query of `requestUri` and the
    /// fields of `postBody` (a `form_post` answer), the latter winning.
    struct Answer {
        var fields: [String: String]
        /// `requestUri` without its query and fragment.
        var base: String

        init(requestUri: String, postBody: String?) throws {
            guard let url = WebURL(requestUri) else { throw FirebaseError.invalid(.invalidRequestUri) }
            base = url.resource
            guard var fields = FormURLEncoded.parse(String(url.query ?? "")) else {
                throw FirebaseError.invalid(.invalidRequestUri)
            }
            if let postBody, !postBody.isEmpty {
                guard let posted = FormURLEncoded.parse(postBody) else {
                    throw FirebaseError.invalid(.invalidIdpResponse, "postBody is not valid form-encoded text.")
                }
                fields.merge(posted) { _, new in new }
            }
            self.fields = fields
        }

        /// Whether this is a provider's answer to a flow Tessera started (it carries the state).
        var isFlowAnswer: Bool { fields["state"].map { !$0.isEmpty } ?? false }
    }

    /// What a redemption yields: the provider's verified profile and the credential for the answer.
    struct Redeemed {
        var profile: ProviderProfile
        var credential: ProviderCredential
    }

    func redeem(
        _ answer: Answer, sessionId: String?, scope: Scope, requestID: String, logger: Logger
    ) async throws -> Redeemed {
        guard let state = answer.fields["state"], let stateScope = Self.scope(ofState: state), stateScope == scope
        else {
            throw Self.unknownFlow
        }
        guard let sessionId, !sessionId.isEmpty, sessionId.utf8.count <= 256 else {
            throw FirebaseError.invalid(.invalidIdpResponse, "sessionId is required with the provider's answer.")
        }
        // Consumed before anything else is checked: whatever follows, this state is never good again.
        let flow = try await directory.call(
            InternalEndpoints.consumeAuthFlow, AuthFlowRequest(scope: scope, stateHash: Self.hexDigest(state)),
            requestID: requestID, logger: logger
        ).flow
        guard Secrets.constantTimeEquals(flow.apiKeyHash, Self.hexDigest(apiKey)) else {
            throw FirebaseError.invalid(.invalidIdpResponse, "The sign-in was started with another API key.")
        }
        let presented = Self.hexDigest(sessionId)
        // Every candidate is compared, each in constant time.
        let sessionMatches = flow.sessionHashes.reduce(false) { $0 || Secrets.constantTimeEquals($1, presented) }
        guard sessionMatches else {
            throw FirebaseError.invalid(.invalidIdpResponse, "The sessionId is not the one of this sign-in.")
        }
        guard Self.sameResource(answer.base, flow.continueUri) else {
            throw FirebaseError.invalid(
                .invalidRequestUri, "The requestUri is not the continueUri this sign-in was started with.")
        }
        if let named = answer.fields["providerId"], !named.isEmpty, named != flow.providerId {
            throw FirebaseError.invalid(.invalidIdpResponse, "The answer is not from \(named).")
        }
        if answer.fields["error"] == "access_denied" || answer.fields["denied"] != nil {
            throw FirebaseError.invalid(.userCancelled)
        }
        if let error = answer.fields["error"] {
            let code = String(error.prefix(64).filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            throw FirebaseError.invalid(.invalidIdpResponse, "The identity provider answered \(code).")
        }
        let config = try await directory.call(
            InternalEndpoints.idpConfig, IdpConfigRequest(scope: scope, providerId: flow.providerId),
            requestID: requestID, logger: logger)
        var credential = try await exchange(answer, flow: flow, config: config, logger: logger)
        credential.nonce = flow.nonce
        var profile = try await providers.verify(credential, config: config, logger: logger)
        if config.providerId == "apple.com", let user = answer.fields["user"] {
            Self.applyAppleUser(user, to: &profile)
        }
        return Redeemed(profile: profile, credential: credential)
    }

    static let unknownFlow = FirebaseError.invalid(
        .invalidIdpResponse, "The sign-in session is unknown, has expired or was already used; sign in again.")

    /// Same scheme, host, port and path.
    static func sameResource(_ lhs: String, _ rhs: String) -> Bool {
        guard let left = WebURL(lhs), let right = WebURL(rhs) else { return false }
        return left.resource == right.resource
    }

    /// Turns the provider's answer into the credential `IdentityProviders` verifies: the tokens the
    /// code is exchanged for, or the ID token posted back.
    func exchange(_ answer: Answer, flow: AuthFlow, config: IdpConfigResponse, logger: Logger) async throws
        -> ProviderCredential
    {
        let kind = try Self.kind(config)
        var credential = ProviderCredential(providerId: flow.providerId)
        switch kind {
        case .oidcImplicit:
            guard let idToken = answer.fields["id_token"], !idToken.isEmpty else {
                throw IdentityProviders.invalid("The provider's answer has no id_token.")
            }
            credential.idToken = idToken
        case .oauth1:
            guard let token = answer.fields["oauth_token"], let verifier = answer.fields["oauth_verifier"],
                let requestToken = flow.requestToken, let requestSecret = flow.requestTokenSecret,
                Secrets.constantTimeEquals(token, requestToken)
            else { throw IdentityProviders.invalid("The provider's answer is not for this sign-in.") }
            let (accessToken, tokenSecret) = try await accessToken(
                config, requestToken: requestToken, requestSecret: requestSecret, verifier: verifier, logger: logger)
            credential.accessToken = accessToken
            credential.tokenSecret = tokenSecret
        case .oidcCode, .apple, .oauth2Code:
            guard let code = answer.fields["code"], !code.isEmpty, code.utf8.count <= 4096 else {
                throw IdentityProviders.invalid("The provider's answer has no authorization code.")
            }
            guard let tokenURL = flow.tokenURL else { throw FirebaseError.internal }
            var form: [(String, String)] = [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", flow.redirectUri),
                ("client_id", config.clientId),
            ]
            var headers: [(String, String)] = [("Accept", "application/json")]
            if kind == .apple {
                form.append(("client_secret", try appleClientSecret(config)))
            } else {
                let secret = try Self.clientSecret(config)
                if try await usesBasicAuthentication(config, logger: logger) {
                    let pair = FormURLEncoded.escape(config.clientId) + ":" + FormURLEncoded.escape(secret)
                    headers.append(("Authorization", "Basic " + Data(pair.utf8).base64EncodedString()))
                } else {
                    form.append(("client_secret", secret))
                }
            }
            if let verifier = flow.codeVerifier { form.append(("code_verifier", verifier)) }
            let reply = try await providers.http.post(
                tokenURL, form: form, headers: headers, guarded: !FederatedProviders.isBuiltIn(config.providerId),
                logger: logger)
            let tokens = try Self.tokenAnswer(reply)
            credential.idToken = tokens.idToken
            credential.accessToken = tokens.accessToken
            if kind != .oauth2Code, credential.idToken == nil {
                throw IdentityProviders.invalid("The provider's token endpoint answered no id_token.")
            }
            if kind == .oauth2Code, credential.accessToken == nil {
                throw IdentityProviders.invalid("The provider's token endpoint answered no access_token.")
            }
        }
        return credential
    }

    /// A tenant's provider takes its client secret the way its discovery document says
    /// (`client_secret_basic` unless it lists only `client_secret_post`); built-in providers take it
    /// in the form.
    func usesBasicAuthentication(_ config: IdpConfigResponse, logger: Logger) async throws -> Bool {
        guard !FederatedProviders.isBuiltIn(config.providerId), let issuer = config.issuer else { return false }
        let methods = try await providers.keys.discovery(issuer: issuer, logger: logger).tokenAuthMethods
        return methods.contains("client_secret_basic") || !methods.contains("client_secret_post")
    }

    /// The tokens of a token endpoint's JSON answer; 5xx is the provider's trouble (503), any other
    /// refusal the code's (`INVALID_IDP_RESPONSE`).
    static func tokenAnswer(_ reply: ProviderHTTP.Answer) throws -> (idToken: String?, accessToken: String?) {
        if reply.status >= 500 || reply.status == 429 {
            throw FirebaseError.unavailable("The identity provider answered \(reply.status); retry shortly.")
        }
        guard reply.status == 200,
            case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: reply.body)
        else { throw IdentityProviders.invalid("The identity provider refused the authorization code.") }
        if object["error"] != nil {
            throw IdentityProviders.invalid("The identity provider refused the authorization code.")
        }
        return (object["id_token"]?.stringValue, object["access_token"]?.stringValue)
    }

    /// Apple's client secret (Sign in with Apple, "Creating a client secret"): an ES256 JWT of the
    /// team, for the Services ID, to Apple, signed with the team's key; five minutes is plenty for
    /// the one call it is made for.
    func appleClientSecret(_ config: IdpConfigResponse) throws -> String {
        let flow = try Self.appleCodeFlow(config)
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: flow.privateKey) else {
            throw FirebaseError.invalid(.operationNotAllowed, "apple.com's code-flow private key is not a P-256 key.")
        }
        let audience = providers.endpoints["apple.com"]?.issuer ?? "https://appleid.apple.com"
        let now = Int64(Date().timeIntervalSince1970)
        let claims: JSONValue = .object([
            "iss": .string(flow.teamId), "iat": .int(now), "exp": .int(now + 300),
            "aud": .string(audience), "sub": .string(config.clientId),
        ])
        let header: JSONValue = .object(["alg": .string("ES256"), "kid": .string(flow.keyId), "typ": .string("JWT")])
        let input =
            Base64URL.encode(try JSONEncoder().encode(header)) + "."
            + Base64URL.encode(try JSONEncoder().encode(claims))
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Apple sends the user's name once, on the first authorization, in the `user` form field (its ID
    /// token never carries it): used where the token said nothing.
    static func applyAppleUser(_ text: String, to profile: inout ProviderProfile) {
        guard text.utf8.count <= 4096, let data = text.data(using: .utf8),
            case .object(let user)? = try? JSONDecoder().decode(JSONValue.self, from: data),
            case .object(let name)? = user["name"]
        else { return }
        let first = name["firstName"]?.stringValue?.nilIfEmpty
        let last = name["lastName"]?.stringValue?.nilIfEmpty
        if profile.firstName == nil { profile.firstName = first }
        if profile.lastName == nil { profile.lastName = last }
        if profile.identity.displayName == nil {
            profile.identity.displayName = [first, last].compactMap { $0 }.joined(separator: " ").nilIfEmpty
        }
    }

    // MARK: OAuth 1.0a (Twitter)

    /// A request token for a sign-in whose answer goes to `callback` (RFC 5849 §2.1).
    func requestToken(_ config: IdpConfigResponse, callback: String, logger: Logger) async throws
        -> (token: String, secret: String)
    {
        let fields = try await oauth1Post(
            config, url: \.requestTokenURL, token: nil, tokenSecret: "", parameters: [("oauth_callback", callback)],
            logger: logger)
        guard let token = fields["oauth_token"], let secret = fields["oauth_token_secret"],
            fields["oauth_callback_confirmed"] == "true"
        else { throw IdentityProviders.invalid("The identity provider gave no request token.") }
        return (token, secret)
    }

    /// The access token and its secret for an authorized request token (RFC 5849 §2.3).
    func accessToken(
        _ config: IdpConfigResponse, requestToken: String, requestSecret: String, verifier: String, logger: Logger
    ) async throws -> (token: String, secret: String) {
        let fields = try await oauth1Post(
            config, url: \.tokenURL, token: requestToken, tokenSecret: requestSecret,
            parameters: [("oauth_verifier", verifier)], logger: logger)
        guard let token = fields["oauth_token"], let secret = fields["oauth_token_secret"] else {
            throw IdentityProviders.invalid("The identity provider gave no access token.")
        }
        return (token, secret)
    }

    /// A POST to one of Twitter's OAuth 1.0a endpoints, signed with the app's consumer key and secret
    /// (and the token so far); its form-encoded answer.
    func oauth1Post(
        _ config: IdpConfigResponse, url: KeyPath<ProviderEndpoints, String?>, token: String?, tokenSecret: String,
        parameters: [(String, String)], logger: Logger
    ) async throws -> [String: String] {
        guard let target = providers.endpoints[config.providerId]?[keyPath: url] else { throw FirebaseError.internal }
        let consumerSecret = try Self.clientSecret(config)
        let authorization = OAuth1.authorization(
            method: "POST", url: target, query: [], consumerKey: config.clientId, consumerSecret: consumerSecret,
            token: token, tokenSecret: tokenSecret, protocolParameters: parameters)
        let reply = try await providers.http.post(
            target, form: [], headers: [("Authorization", authorization)], logger: logger)
        return try Self.oauth1Answer(reply)
    }

    static func oauth1Answer(_ reply: ProviderHTTP.Answer) throws -> [String: String] {
        if reply.status >= 500 || reply.status == 429 {
            throw FirebaseError.unavailable("The identity provider answered \(reply.status); retry shortly.")
        }
        guard reply.status == 200, let fields = FormURLEncoded.parse(String(decoding: reply.body, as: UTF8.self))
        else { throw IdentityProviders.invalid("The identity provider refused the request.") }
        return fields
    }
}
