import Foundation
import Hummingbird
import Logging
import TesseraShared

/// `accounts:signInWithIdp` (docs/protocol/accounts.md#end-user-endpoints,
/// docs/protocol/federated.md#linking-a-federated-credential, #federated-sign-in,
/// docs/protocol/accounts.md#verified-email-and-automatic-linking,
/// docs/protocol/federated.md#federated-providers) and `accounts:signInWithCustomToken`
/// (docs/protocol/tokens.md#custom-tokens, #token-rules).
struct FederatedController {
    let tokens: SessionTokens
    let providers: IdentityProviders
    let flows: AuthorizationFlows
    let configuration: TokenServiceConfiguration

    func addRoutes(to clients: RouterGroup<TokenContext>) {
        clients.client(.post, "v1/accounts:signInWithIdp", use: signInWithIdp)
        clients.client(.post, "v1/accounts:signInWithCustomToken", use: signInWithCustomToken)
    }

    struct IdpRequest: Decodable {
        var requestUri: String?
        var postBody: String?
        var idToken: String?
        var tenantId: String?
        var returnIdpCredential: Bool?
        var returnSecureToken: Bool?
        var returnRefreshToken: Bool?
        var pendingIdToken: String?
        var sessionId: String?
        /// false on re-authentication (the Apple and JS SDKs): an unknown identity is an error.
        var autoCreate: Bool?
    }

    struct VerifyAssertionResponse: Encodable, Sendable {
        var kind = "identitytoolkit#VerifyAssertionResponse"
        var providerId: String
        var localId: String?
        var email: String?
        var emailVerified: Bool?
        var displayName: String?
        var fullName: String?
        var firstName: String?
        var lastName: String?
        var photoUrl: String?
        var screenName: String?
        var federatedId: String
        var rawUserInfo: String?
        var oauthIdToken: String?
        var oauthAccessToken: String?
        var oauthTokenSecret: String?
        var isNewUser: Bool?
        var emailRecycled: Bool?
        var needConfirmation: Bool?
        var verifiedProvider: [String]?
        var errorMessage: String?
        var tenantId: String?
        var idToken: String?
        var refreshToken: String?
        var expiresIn: String?
        /// A user with second factors (docs/protocol/mfa.md#signing-in): these instead of tokens.
        var mfaPendingCredential: String?
        var mfaInfo: [MFAEnrollmentInfo]?
    }

    /// The provider's side of the answer, shared by every outcome.
    static func answer(_ profile: ProviderProfile, credential: ProviderCredential, scope: Scope)
        -> VerifyAssertionResponse
    {
        let identity = profile.identity
        let federatedId =
            identity.providerId == "google.com" ? "https://accounts.google.com/\(identity.rawId)" : identity.rawId
        return VerifyAssertionResponse(
            providerId: identity.providerId, email: identity.email, emailVerified: identity.emailVerified ?? false,
            displayName: identity.displayName, fullName: identity.displayName, firstName: profile.firstName,
            lastName: profile.lastName, photoUrl: identity.photoUrl, screenName: identity.screenName,
            federatedId: federatedId, rawUserInfo: profile.rawUserInfo, oauthIdToken: credential.idToken,
            oauthAccessToken: credential.accessToken, oauthTokenSecret: credential.tokenSecret, tenantId: scope.tenantID
        )
    }

    /// A credential's parameters: `requestUri`'s query, then its fragment, then `postBody`, each winning over
    /// the one before (docs/protocol/accounts.md#end-user-endpoints: a redirect's answer may arrive in any of
    /// them). A `requestUri` whose query or fragment is not form-encoded carries none; a `postBody` that is
    /// not is an error.
    static func credentialFields(requestUri: String, postBody: String?) throws -> [String: String] {
        var fields: [String: String] = [:]
        if let url = WebURL(requestUri) {
            for part in [url.query, url.fragment] {
                guard let part, let parsed = FormURLEncoded.parse(String(part)) else { continue }
                fields.merge(parsed) { _, new in new }
            }
        }
        if let postBody, !postBody.isEmpty {
            guard let posted = FormURLEncoded.parse(postBody) else {
                throw FirebaseError.invalid(.invalidIdpResponse, "postBody is not valid form-encoded text.")
            }
            fields.merge(posted) { _, new in new }
        }
        return fields
    }

    @Sendable func signInWithIdp(_ request: Request, context: ClientContext) async throws
        -> JSONResponse<VerifyAssertionResponse>
    {
        let body = try await request.decodeJSON(IdpRequest.self, context: context)
        return try await tokens.switchesFirst(Scope(wire: body.tenantId), context: context) {
            if body.pendingIdToken != nil || body.returnRefreshToken == true {
                throw FirebaseError.notImplemented("signInWithIdp with pendingIdToken or returnRefreshToken")
            }
            guard let requestUri = body.requestUri, !requestUri.isEmpty else {
                throw FirebaseError.invalid(.missingRequestUri)
            }
            guard let url = URL(string: requestUri), url.scheme != nil, url.host != nil else {
                throw FirebaseError.invalid(.invalidRequestUri)
            }
            var scope = Scope(wire: body.tenantId)
            var linkTo: String?
            if let idToken = body.idToken {
                let (verified, user) = try await tokens.verify(
                    idToken: idToken, requested: scope, requestID: context.requestID, logger: context.logger)
                linkTo = user.localId
                scope = verified.scope
            }
            // The provider's answer to a flow Tessera started (the hosted handler, createAuthUri), or a
            // credential the app already holds. Only an answer presented with its session id is a flow's:
            // an app's own page may carry a `state` of its own beside a credential it holds.
            let profile: ProviderProfile
            let credential: ProviderCredential
            let answer = (try? AuthorizationFlows.Answer(requestUri: requestUri, postBody: body.postBody))
            if let answer, answer.isFlowAnswer, let sessionId = body.sessionId, !sessionId.isEmpty {
                let redeemed = try await flows.redeem(
                    answer, sessionId: sessionId, scope: scope, requestID: context.requestID, logger: context.logger)
                (profile, credential) = (redeemed.profile, redeemed.credential)
            } else {
                let fields = try Self.credentialFields(requestUri: requestUri, postBody: body.postBody)
                if answer?.isFlowAnswer == true, fields["id_token"] == nil, fields["access_token"] == nil {
                    // A provider's answer to a flow, not a credential: it is redeemed with its session id.
                    throw FirebaseError.invalid(
                        .invalidIdpResponse, "sessionId is required with the provider's answer.")
                }
                let given = try ProviderCredential(fields: fields)
                if given.providerId.hasPrefix("saml.") || given.samlResponse != nil {
                    throw FirebaseError.notImplemented("SAML sign-in")
                }
                guard FederatedProviders.kind(of: given.providerId) != nil else {
                    throw FirebaseError.invalid(.invalidProviderId)
                }
                let config = try await tokens.directory.call(
                    InternalEndpoints.idpConfig, IdpConfigRequest(scope: scope, providerId: given.providerId),
                    requestID: context.requestID, logger: context.logger)
                profile = try await providers.verify(given, config: config, logger: context.logger)
                credential = given
            }
            var response = Self.answer(profile, credential: credential, scope: scope)

            let (refreshToken, session) = tokens.newSession()
            var signIn = SignInWithIdpRequest(
                scope: scope, identity: profile.identity, linkTo: linkTo, session: session)
            signIn.clientIP = tokens.clientIP(request, context)
            signIn.autoCreate = body.autoCreate
            let outcome: SignInWithIdpResponse
            do {
                outcome = try await tokens.directory.call(
                    InternalEndpoints.signInWithIdp, signIn,
                    requestID: context.requestID, logger: context.logger)
            } catch let error as FirebaseError
                where body.returnIdpCredential == true
                && ["FEDERATED_USER_ID_ALREADY_LINKED", "EMAIL_EXISTS"].contains(error.code)
            {
                // With returnIdpCredential the SDK builds credential-already-in-use from a 200
                // (docs/protocol/federated.md#linking-a-federated-credential).
                response.errorMessage = error.code
                return JSONResponse(response)
            }
            switch outcome.outcome {
            case .needConfirmation:
                response.needConfirmation = true
                response.verifiedProvider = outcome.verifiedProvider
                return JSONResponse(response)
            case .secondFactor:
                // The provider is linked; the sign-in waits for a second factor
                // (docs/protocol/mfa.md#signing-in): the token made for the session is the pending
                // credential.
                guard let user = outcome.user, let challenge = outcome.secondFactor else {
                    throw FirebaseError.internal
                }
                response.localId = user.localId
                response.isNewUser = outcome.isNewUser
                response.mfaPendingCredential = refreshToken
                response.mfaInfo = challenge.mfaInfo
                return JSONResponse(response)
            case .signedIn:
                guard let user = outcome.user, let newSession = outcome.session else { throw FirebaseError.internal }
                response.localId = user.localId
                response.isNewUser = outcome.isNewUser
                response.emailRecycled = outcome.emailRecycled ? true : nil
                response.idToken = try tokens.issuer.mint(user: user, session: newSession)
                tokens.issuer.countIssued("refresh_token", provider: newSession.signInProvider)
                response.refreshToken = refreshToken
                response.expiresIn = String(IDTokenIssuer.lifetime)
                return JSONResponse(response)
            }
        }
    }

    struct CustomTokenRequest: Decodable {
        var token: String?
        var tenantId: String?
        var returnSecureToken: Bool?
    }

    struct CustomTokenResponse: Encodable, Sendable {
        var kind = "identitytoolkit#VerifyCustomTokenResponse"
        var isNewUser: Bool
        var idToken: String
        var refreshToken: String
        var expiresIn = String(IDTokenIssuer.lifetime)
    }

    @Sendable func signInWithCustomToken(_ request: Request, context: ClientContext) async throws
        -> JSONResponse<CustomTokenResponse>
    {
        let body = try await request.decodeJSON(CustomTokenRequest.self, context: context)
        return try await tokens.switchesFirst(Scope(wire: body.tenantId), context: context) {
            guard let token = body.token, !token.isEmpty else { throw FirebaseError.invalid(.missingCustomToken) }
            guard token.utf8.count <= 16 * 1024 else {
                throw FirebaseError.invalid(.invalidCustomToken, "The custom token is too large.")
            }
            let clientIP = tokens.clientIP(request, context)
            let (issued, answer) = try await tokens.startSession(
                answering: InternalEndpoints.signInWithCustomToken, requestID: context.requestID, logger: context.logger
            ) { session in
                var signIn = SignInWithCustomTokenRequest(
                    scope: Scope(wire: body.tenantId), token: token, session: session)
                signIn.clientIP = clientIP
                return signIn
            }
            return JSONResponse(
                CustomTokenResponse(
                    isNewUser: answer.isNewUser, idToken: issued.idToken, refreshToken: issued.refreshToken))
        }
    }
}
