import Foundation
import Logging
import TesseraShared

/// Mints and verifies Tessera's ID tokens (docs/protocol/tokens.md#token-rules, #id-tokens).
public struct IDTokenIssuer: Sendable {
    public static let lifetime: Int64 = 3600
    let keys: KeyStore
    let projectID: String
    let metrics: ServiceMetrics?

    public init(keys: KeyStore, projectID: String, metrics: ServiceMetrics? = nil) {
        self.keys = keys
        self.projectID = projectID
        self.metrics = metrics
    }

    /// Counts a token handed out (`id_token`, `refresh_token`, `session_cookie`) by sign-in provider.
    func countIssued(_ type: String, provider: String) {
        metrics?.increment(
            "tokens_issued", labels: [("type", type), ("provider", provider)],
            help: "Tokens issued, by type and sign-in provider.")
    }

    public var issuer: String { "https://securetoken.google.com/\(projectID)" }

    /// The claims of docs/protocol/tokens.md#id-tokens, in construction order: profile, then custom claims,
    /// then the reserved claims nothing may override. Keys are sorted when encoded, so the same inputs give
    /// the same token (RS256 signatures are deterministic): a grace-window retry re-mints an identical token.
    public func claims(user: UserRecord, session: SessionInfo) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [:]
        if let name = user.displayName { claims["name"] = .string(name) }
        if let picture = user.photoUrl { claims["picture"] = .string(picture) }
        if let custom = user.customAttributes, let data = custom.data(using: .utf8),
            case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: data)
        {
            claims.merge(object) { _, new in new }
        }
        // A custom token's claims win over the user's custom claims (docs/protocol/tokens.md#id-tokens step 2).
        if let extra = session.extraClaims, let data = extra.data(using: .utf8),
            case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: data)
        {
            claims.merge(object) { _, new in new }
        }
        // Claims stored before the reserved names were refused at write time are dropped here: a custom
        // claim never adds a reserved one the account lacks (an `email` for a user without one, say).
        // Only users with custom claims pay for it (every refresh mints).
        if user.customAttributes != nil || session.extraClaims != nil {
            for name in CustomClaims.reserved { claims.removeValue(forKey: name) }
            claims = claims.filter { !CustomClaims.isUnprintableName($0.key) }
        }
        var identities: [String: JSONValue] = [:]
        if let email = user.email {
            claims["email"] = .string(email)
            claims["email_verified"] = .bool(user.emailVerified)
            identities["email"] = .array([.string(email)])
        }
        if let phone = user.phoneNumber {
            claims["phone_number"] = .string(phone)
            identities["phone"] = .array([.string(phone)])
        }
        for provider in user.providerUserInfo where provider.providerId != "password" && provider.providerId != "phone"
        {
            var ids: [JSONValue] = []
            if case .array(let existing)? = identities[provider.providerId] { ids = existing }
            ids.append(.string(provider.rawId))
            identities[provider.providerId] = .array(ids)
        }
        if session.signInProvider == "anonymous" { claims["provider_id"] = .string("anonymous") }
        var firebase: [String: JSONValue] = [
            "identities": .object(identities), "sign_in_provider": .string(session.signInProvider),
        ]
        if let tenant = user.tenantId { firebase["tenant"] = .string(tenant) }
        // A session signed in with a second factor says which (docs/protocol/mfa.md#id-tokens).
        if let factor = session.secondFactor { firebase["sign_in_second_factor"] = .string(factor) }
        if let enrollment = session.secondFactorId { firebase["second_factor_identifier"] = .string(enrollment) }
        // The session the token belongs to, so that a revocation in the token's own second still ends
        // it (docs/design-notes.md, "Revocation is exact"). Session cookies have none.
        if !session.familyId.isEmpty { firebase[Self.sessionClaim] = .string(session.familyId) }
        claims["firebase"] = .object(firebase)
        claims["auth_time"] = .int(session.authTime)
        claims["user_id"] = .string(user.localId)
        claims["sub"] = .string(user.localId)
        claims["iat"] = .int(session.tokenIssuedAt)
        claims["exp"] = .int(session.tokenIssuedAt + Self.lifetime)
        claims["aud"] = .string(projectID)
        claims["iss"] = .string(issuer)
        return claims
    }

    /// The issuer of session cookies (docs/protocol/tokens.md#session-cookies).
    public var sessionIssuer: String { "https://session.firebase.google.com/\(projectID)" }

    public func mint(user: UserRecord, session: SessionInfo) throws -> String {
        let token = try sign(claims(user: user, session: session))
        countIssued("id_token", provider: session.signInProvider)
        return token
    }

    /// Signs a claim set with the current signing key of `keys` (by default the ID tokens'; keys
    /// sorted: same claims, same token).
    public func sign(_ claims: [String: JSONValue], keys: KeyStore? = nil) throws -> String {
        let payload = Data(JSONValue.object(claims).jsonBytes())
        let signer = (keys ?? self.keys).current.signer
        return try JWS.signRS256(payload: payload, kid: signer.kid, signer: signer.signer)
    }

    /// What an endpoint learns from a verified ID token.
    public struct Verified: Sendable {
        public let localId: String
        public let scope: Scope
        public let issuedAt: Int64
        public let authTime: Int64
        public let signInProvider: String
        /// `firebase.tessera_session`: the session that minted the token (nil in older tokens).
        public var session: String? = nil
        /// `firebase.second_factor_identifier`: the enrolment the session was signed in with, if any.
        public var secondFactorId: String? = nil
    }

    /// The claim in `firebase` that names the token's session.
    static let sessionClaim = "tessera_session"

    /// The claims verification reads; the others (custom claims, `firebase.identities`) are skipped.
    /// Read by hand (`DirectJSONDecodable`): Foundation's decoder was 1% of all CPU under lookup.
    struct Payload: DirectJSONDecodable {
        struct Firebase: DirectJSONDecodable {
            var tenant: String?
            var sign_in_provider: String?
            var tessera_session: String?
            var second_factor_identifier: String?

            init(json reader: inout JSONReader) throws {
                try reader.object { key, reader in
                    switch key {
                    case "tenant": tenant = try reader.optionalString()
                    case "sign_in_provider": sign_in_provider = try reader.optionalString()
                    case IDTokenIssuer.sessionClaim: tessera_session = try reader.optionalString()
                    case "second_factor_identifier": second_factor_identifier = try reader.optionalString()
                    default: try reader.skipValue()
                    }
                }
            }
        }
        var iss: String?
        var aud: String?
        var sub: String?
        var iat: Int64?
        var exp: Int64?
        var auth_time: Int64?
        var user_id: String?
        var firebase: Firebase?

        init(json reader: inout JSONReader) throws {
            try reader.object { key, reader in
                switch key {
                case "iss": iss = try reader.optionalString()
                case "aud": aud = try reader.optionalString()
                case "sub": sub = try reader.optionalString()
                case "iat": iat = try reader.optionalInt()
                case "exp": exp = try reader.optionalInt()
                case "auth_time": auth_time = try reader.optionalInt()
                case "user_id": user_id = try reader.optionalString()
                case "firebase": firebase = try reader.null() ? nil : try Firebase(json: &reader)
                default: try reader.skipValue()
                }
            }
        }
    }

    /// Checks signature (RS256 only, known kid), `iss`, `aud`, `sub`, `iat`, `exp`. The tenant, the
    /// user's existence, `disabled` and `validSince` are checked by `IDTokenVerifier`.
    public func verifySignatureAndClaims(_ token: String, now: Date = Date()) throws -> Verified {
        let set = keys.current
        let payloadData: Data
        do {
            payloadData = try JWS.verifyRS256(token, publicKey: set.publicKey(kid:))
        } catch {
            throw FirebaseError.invalid(.invalidIdToken)
        }
        guard let payload = try? Payload(jsonBytes: payloadData),
            payload.iss == issuer, payload.aud == projectID,
            let sub = payload.sub, !sub.isEmpty, sub.count <= 128, payload.user_id == nil || payload.user_id == sub,
            let iat = payload.iat, let exp = payload.exp, let authTime = payload.auth_time
        else { throw FirebaseError.invalid(.invalidIdToken) }
        let nowSeconds = Int64(now.timeIntervalSince1970)
        // A token from the future (beyond a little clock skew) was not issued by this service.
        guard iat <= nowSeconds + 300, exp == iat + Self.lifetime, authTime <= iat + 300 else {
            throw FirebaseError.invalid(.invalidIdToken)
        }
        guard exp > nowSeconds else { throw FirebaseError.invalid(.tokenExpired) }
        var verified = Verified(
            localId: sub, scope: Scope(wire: payload.firebase?.tenant), issuedAt: iat, authTime: authTime,
            signInProvider: payload.firebase?.sign_in_provider ?? "", session: payload.firebase?.tessera_session)
        verified.secondFactorId = payload.firebase?.second_factor_identifier
        return verified
    }
}
