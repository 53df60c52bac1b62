import Crypto
import Foundation
import Logging
import TesseraShared
import _CryptoExtras

/// A provider credential as `signInWithIdp` carries it in `postBody` (docs/protocol/accounts.md#end-user-endpoints).
struct ProviderCredential: Sendable {
    var providerId: String
    var idToken: String?
    var accessToken: String?
    /// Twitter's OAuth 1.0a token secret.
    var tokenSecret: String?
    var nonce: String?
    var code: String?
    var samlResponse: String?

    /// A credential Tessera obtained itself, at the end of an authorization flow.
    init(providerId: String) {
        self.providerId = providerId
    }

    init(postBody: String) throws {
        guard let fields = FormURLEncoded.parse(postBody) else {
            throw FirebaseError.invalid(.invalidIdpResponse, "postBody is not valid form-encoded text.")
        }
        try self.init(fields: fields)
    }

    /// The credential's parameters, wherever the request carried them (`requestUri`'s query and
    /// fragment, `postBody`). Without a `providerId` nothing says what the credential is
    /// (docs/design-notes.md, "Federated providers"); the detail never echoes the credential.
    init(fields: [String: String]) throws {
        guard let providerId = fields["providerId"], !providerId.isEmpty else {
            throw FirebaseError.invalid(
                .invalidCredentialOrProviderId, "Invalid IdP response/credential: the providerId is missing.")
        }
        self.providerId = providerId
        let value: (String) -> String? = { fields[$0].flatMap { $0.isEmpty ? nil : $0 } }
        idToken = value("id_token")
        accessToken = value("access_token")
        tokenSecret = value("oauth_token_secret")
        nonce = value("nonce")
        code = value("code")
        samlResponse = value("SAMLResponse")
    }
}

/// What a provider said, for the `signInWithIdp` answer.
struct ProviderProfile: Sendable {
    var identity: FederatedIdentity
    var firstName: String?
    var lastName: String?
    /// The claims or user-info answer as JSON text (`rawUserInfo`).
    var rawUserInfo: String
}

/// Verifies provider credentials (docs/protocol/federated.md#federated-providers): OIDC ID tokens against the
/// provider's keys, OAuth access tokens against its user-info API.
struct IdentityProviders: Sendable {
    let endpoints: [String: ProviderEndpoints]
    let keys: JWKSCache
    let http: ProviderHTTP
    /// Tolerated clock difference with providers.
    static let leeway: Int64 = 30

    /// Microsoft's consumer-account (MSA) tenant: the one directory that owns outlook.com and
    /// hotmail.com addresses.
    static let microsoftConsumerTenant = "9188040d-6c67-4c5b-b112-36a304b66dad"

    /// Whether a Microsoft ID token's `email` is the user's own: Microsoft sends no `email_verified`, and any
    /// Entra tenant may write any address into a user's mail attribute ("nOAuth"). So only the consumer
    /// tenant's tokens, or a token whose `xms_edov` says the domain is verified by its tenant, vouch for the
    /// address (the microsoft.com row of docs/protocol/accounts.md#verified-email-and-automatic-linking).
    static func microsoftVouchesForEmail(_ claims: Claims) -> Bool {
        claims.string("tid") == microsoftConsumerTenant || claims.bool("xms_edov") == true
    }

    static func invalid(_ detail: String) -> FirebaseError {
        FirebaseError.invalid(.invalidIdpResponse, detail)
    }

    func verify(_ credential: ProviderCredential, config: IdpConfigResponse, logger: Logger) async throws
        -> ProviderProfile
    {
        switch FederatedProviders.kind(of: credential.providerId) {
        case .oidc?:
            guard let idToken = credential.idToken else {
                if credential.code != nil { throw FirebaseError.notImplemented("The OIDC code flow") }
                throw Self.invalid("An id_token is required for \(credential.providerId).")
            }
            return try await verifyIDToken(idToken, credential: credential, config: config, logger: logger)
        case .oauth?:
            guard let accessToken = credential.accessToken else {
                throw Self.invalid("An access_token is required for \(credential.providerId).")
            }
            return try await fetchUserInfo(accessToken, credential: credential, config: config, logger: logger)
        case nil:
            throw FirebaseError.invalid(.invalidProviderId)
        }
    }

    // MARK: OIDC

    struct Claims {
        var all: [String: JSONValue]
        func string(_ name: String) -> String? { all[name]?.stringValue }
        func bool(_ name: String) -> Bool? {
            switch all[name] {
            case .bool(let value)?: value
            case .string("true")?: true
            case .string("false")?: false
            default: nil
            }
        }
    }

    func verifyIDToken(
        _ token: String, credential: ProviderCredential, config: IdpConfigResponse, logger: Logger
    ) async throws -> ProviderProfile {
        let providerId = credential.providerId
        guard let header = try? JWS.header(of: token) else { throw Self.invalid("The id_token is not a JWT.") }
        guard header.alg == "RS256" || header.alg == "ES256" else {
            throw Self.invalid("The id_token must be signed with RS256 or ES256.")
        }
        guard let kid = header.kid, !kid.isEmpty else { throw Self.invalid("The id_token has no key id.") }
        let jwksURL: String
        var expectedIssuer: ProviderEndpoints
        if FederatedProviders.isBuiltIn(providerId) {
            guard let endpoints = endpoints[providerId], let url = endpoints.jwksURL else {
                throw FirebaseError.internal
            }
            jwksURL = url
            expectedIssuer = endpoints
        } else {
            guard let issuer = config.issuer else { throw FirebaseError.invalid(.operationNotAllowed) }
            jwksURL = try await keys.jwksURL(issuer: issuer, logger: logger)
            expectedIssuer = ProviderEndpoints(issuer: issuer)
            if issuer.hasSuffix("/") { expectedIssuer.alternateIssuers = [String(issuer.dropLast())] }
        }
        let guarded = !FederatedProviders.isBuiltIn(providerId)
        guard let key = try await keys.key(url: jwksURL, kid: kid, guarded: guarded, logger: logger) else {
            throw Self.invalid("The id_token is signed with a key the provider does not publish.")
        }
        let payload: Data
        do {
            switch (key, header.alg) {
            case (.rsa(let rsa), "RS256"): payload = try JWS.verifyRS256(token, key: rsa)
            case (.p256(let ec), "ES256"): payload = try JWS.verifyES256(token, key: ec)
            default: throw JWS.Failure.unsupportedAlgorithm
            }
        } catch {
            throw Self.invalid("The id_token's signature is invalid.")
        }
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: payload) else {
            throw Self.invalid("The id_token's payload is not a JSON object.")
        }
        let claims = Claims(all: object)
        guard let iss = claims.string("iss"), expectedIssuer.accepts(issuer: iss, tid: claims.string("tid")) else {
            throw Self.invalid("The id_token was not issued by \(providerId).")
        }
        let audienceMatches: Bool
        switch object["aud"] {
        case .string(let aud)?: audienceMatches = aud == config.clientId
        case .array(let auds)?: audienceMatches = auds.contains(.string(config.clientId))
        default: audienceMatches = false
        }
        guard audienceMatches else { throw Self.invalid("The id_token's audience is not this app's client id.") }
        let now = Int64(Date().timeIntervalSince1970)
        guard let exp = object["exp"]?.intValue else { throw Self.invalid("The id_token has no expiry.") }
        // `exp` is whatever the provider wrote: compare without adding to it (Int64.max would trap).
        guard exp > now - Self.leeway else { throw Self.invalid("The id_token has expired.") }
        if let iat = object["iat"]?.intValue, iat > now + 300 {
            throw Self.invalid("The id_token was issued in the future.")
        }
        guard let sub = claims.string("sub"), !sub.isEmpty, sub.count <= 255 else {
            throw Self.invalid("The id_token has no subject.")
        }
        if let nonce = credential.nonce {
            let hashed = SHA256.hash(data: Data(nonce.utf8)).map { String(format: "%02x", $0) }.joined()
            guard let tokenNonce = claims.string("nonce"), tokenNonce == nonce || tokenNonce == hashed else {
                throw FirebaseError.invalid(.missingOrInvalidNonce, "The nonce does not match the id_token's.")
            }
        } else if claims.string("nonce") != nil {
            // A token bound to a nonce is only good with it: otherwise a token captured from another
            // sign-in flow could be replayed here.
            throw FirebaseError.invalid(.missingOrInvalidNonce, "Nonce is missing in the request.")
        }
        let firstName = claims.string("given_name")
        let lastName = claims.string("family_name")
        let fullName =
            claims.string("name") ?? [firstName, lastName].compactMap { $0 }.joined(separator: " ").nilIfEmpty
        var identity = FederatedIdentity(
            providerId: providerId, rawId: sub, email: claims.string("email").flatMap(Credentials.normalizedEmail),
            emailVerified: claims.bool("email_verified"), displayName: fullName, photoUrl: claims.string("picture"),
            screenName: claims.string("screen_name") ?? claims.string("preferred_username"))
        if providerId == "microsoft.com", !Self.microsoftVouchesForEmail(claims) {
            identity.emailVerified = false
        }
        let rawUserInfo =
            providerId == "google.com" ? Self.googleUserInfo(claims) : String(decoding: payload, as: UTF8.self)
        return ProviderProfile(
            identity: identity, firstName: firstName, lastName: lastName, rawUserInfo: rawUserInfo)
    }

    /// Google's `rawUserInfo` in the shape of Google's user-info answer, as Firebase gives it and
    /// the SDKs hand it to apps as the profile (docs/design-notes.md, "Federated providers"): `id`
    /// (the `sub`), `verified_email`, and the profile claims under their own names, each only when
    /// the ID token carries it.
    static func googleUserInfo(_ claims: Claims) -> String {
        var info: [String: JSONValue] = [:]
        info["id"] = claims.string("sub").map(JSONValue.string)
        for name in ["email", "name", "given_name", "family_name", "picture", "locale", "hd"] {
            info[name] = claims.string(name).map(JSONValue.string)
        }
        if claims.string("email") != nil { info["verified_email"] = .bool(claims.bool("email_verified") == true) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(JSONValue.object(info))).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    // MARK: OAuth user info

    /// GitHub's user API answers for any token of the user, whichever app it was issued to: so a
    /// site the user signed in to with GitHub could sign in here as them. GitHub's check of a token
    /// against this app's client id and secret (`POST /applications/{client_id}/token`) tells.
    func checkGitHubToken(_ accessToken: String, config: IdpConfigResponse, logger: Logger) async throws {
        guard let secret = config.clientSecret else {
            throw FirebaseError.invalid(
                .operationNotAllowed, "github.com is configured without its client secret (clientSecret).")
        }
        guard let template = endpoints["github.com"]?.tokenCheckURL else { throw FirebaseError.internal }
        let unreserved = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let clientID = config.clientId.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
        let basic = Data("\(config.clientId):\(secret)".utf8).base64EncodedString()
        let body = try JSONEncoder().encode(["access_token": accessToken])
        let answer = try await http.post(
            template.replacingOccurrences(of: "{client_id}", with: clientID), json: body,
            headers: [("Authorization", "Basic \(basic)")], logger: logger)
        // 5xx, and 403/429 (GitHub's rate limits), are the provider's trouble, not the token's.
        if answer.status >= 500 || answer.status == 403 || answer.status == 429 {
            throw FirebaseError.unavailable("The identity provider answered \(answer.status); retry shortly.")
        }
        guard answer.status == 200 else { throw Self.invalid("The access token was not issued to this app.") }
    }

    func fetchUserInfo(
        _ accessToken: String, credential: ProviderCredential, config: IdpConfigResponse, logger: Logger
    ) async throws -> ProviderProfile {
        let providerId = credential.providerId
        guard let base = endpoints[providerId]?.userInfoURL else { throw FirebaseError.internal }
        let answer: ProviderHTTP.Answer
        switch providerId {
        case "facebook.com":
            // appsecret_proof: Facebook refuses it unless the token was issued to this app. Without
            // it, a token any other Facebook app obtained from the user would sign in here.
            guard let secret = config.clientSecret else {
                throw FirebaseError.invalid(
                    .operationNotAllowed, "facebook.com is configured without its app secret (clientSecret).")
            }
            let proof = HMAC<SHA256>.authenticationCode(
                for: Data(accessToken.utf8), using: SymmetricKey(data: Data(secret.utf8)))
            let query =
                "fields=id,name,email,first_name,last_name,picture&access_token=\(Self.percentEncode(accessToken))"
                + "&appsecret_proof=" + proof.map { String(format: "%02x", $0) }.joined()
            answer = try await http.get(base + (base.contains("?") ? "&" : "?") + query, logger: logger)
        case "github.com":
            try await checkGitHubToken(accessToken, config: config, logger: logger)
            answer = try await http.get(base, headers: [("Authorization", "Bearer \(accessToken)")], logger: logger)
        case "twitter.com":
            guard let tokenSecret = credential.tokenSecret else {
                throw Self.invalid("twitter.com needs oauth_token_secret with the access_token.")
            }
            guard let consumerSecret = config.clientSecret else {
                throw FirebaseError.invalid(
                    .operationNotAllowed, "twitter.com is configured without its consumer secret (clientSecret).")
            }
            let query = [("include_email", "true"), ("skip_status", "true")]
            let authorization = OAuth1.authorization(
                method: "GET", url: base, query: query, consumerKey: config.clientId,
                consumerSecret: consumerSecret, token: accessToken, tokenSecret: tokenSecret)
            answer = try await http.get(
                base + "?" + query.map { "\($0.0)=\($0.1)" }.joined(separator: "&"),
                headers: [("Authorization", authorization)], logger: logger)
        default:
            throw FirebaseError.invalid(.invalidProviderId)
        }
        if answer.status >= 500 {
            throw FirebaseError.unavailable("The identity provider answered \(answer.status); retry shortly.")
        }
        guard answer.status == 200,
            case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: answer.body)
        else { throw Self.invalid("The provider refused the access token.") }
        let claims = Claims(all: object)
        let raw = String(decoding: answer.body, as: UTF8.self)
        let email = claims.string("email").flatMap(Credentials.normalizedEmail)
        switch providerId {
        case "facebook.com":
            guard let id = claims.string("id"), !id.isEmpty else { throw Self.invalid("The user info has no id.") }
            var picture: String?
            if case .object(let p)? = object["picture"], case .object(let d)? = p["data"] {
                picture = d["url"]?.stringValue
            }
            return ProviderProfile(
                identity: FederatedIdentity(
                    providerId: providerId, rawId: id, email: email, displayName: claims.string("name"),
                    photoUrl: picture),
                firstName: claims.string("first_name"), lastName: claims.string("last_name"), rawUserInfo: raw)
        case "github.com":
            guard let id = object["id"]?.intValue.map(String.init) ?? claims.string("id") else {
                throw Self.invalid("The user info has no id.")
            }
            return ProviderProfile(
                identity: FederatedIdentity(
                    providerId: providerId, rawId: id, email: email, displayName: claims.string("name"),
                    photoUrl: claims.string("avatar_url"), screenName: claims.string("login")),
                rawUserInfo: raw)
        default:
            guard let id = claims.string("id_str") ?? object["id"]?.intValue.map(String.init) else {
                throw Self.invalid("The user info has no id.")
            }
            return ProviderProfile(
                identity: FederatedIdentity(
                    providerId: providerId, rawId: id, email: email, displayName: claims.string("name"),
                    photoUrl: claims.string("profile_image_url_https"), screenName: claims.string("screen_name")),
                rawUserInfo: raw)
        }
    }

    static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// RFC 3986 unreserved characters stay; everything else is percent-encoded (OAuth's rule).
    static func percentEncode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}

/// OAuth 1.0a request signing with HMAC-SHA1 (RFC 5849 §3.4), as Twitter's v1.1 API requires.
enum OAuth1 {
    /// `token` is nil when asking for a request token; `protocolParameters` are the flow's other
    /// `oauth_*` parameters (`oauth_callback`, `oauth_verifier`), signed and sent in the header.
    static func authorization(
        method: String, url: String, query: [(String, String)], consumerKey: String, consumerSecret: String,
        token: String?, tokenSecret: String, protocolParameters: [(String, String)] = [],
        nonce: String = Secrets.randomAlphanumeric(32), timestamp: Int64 = Int64(Date().timeIntervalSince1970)
    ) -> String {
        let enc = IdentityProviders.percentEncode
        var oauth: [(String, String)] = [
            ("oauth_consumer_key", consumerKey), ("oauth_nonce", nonce), ("oauth_signature_method", "HMAC-SHA1"),
            ("oauth_timestamp", String(timestamp)),
        ]
        if let token { oauth.append(("oauth_token", token)) }
        oauth.append(("oauth_version", "1.0"))
        oauth += protocolParameters
        let parameters = (oauth + query).map { (enc($0.0), enc($0.1)) }.sorted { $0 < $1 }
        let normalized = parameters.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let base = [method.uppercased(), enc(url), enc(normalized)].joined(separator: "&")
        let key = SymmetricKey(data: Data((enc(consumerSecret) + "&" + enc(tokenSecret)).utf8))
        let signature = Data(HMAC<Insecure.SHA1>.authenticationCode(for: Data(base.utf8), using: key))
        oauth.append(("oauth_signature", signature.base64EncodedString()))
        return "OAuth " + oauth.map { "\(enc($0.0))=\"\(enc($0.1))\"" }.joined(separator: ", ")
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
