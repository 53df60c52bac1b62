import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

/// End-user `accounts:*` endpoints (docs/protocol/accounts.md#end-user-endpoints). Privileged calls on these
/// paths are forwarded to the directory's admin API, which authenticates them.
struct AccountsController {
    let tokens: SessionTokens
    let flows: AuthorizationFlows
    let configuration: TokenServiceConfiguration

    func addRoutes(to clients: RouterGroup<TokenContext>) {
        clients.client(.post, "v1/accounts:signUp", use: signUp)
        clients.client(.post, "v1/accounts:lookup", use: lookup)
        clients.client(.post, "v1/accounts:delete", use: delete)
        clients.client(.post, "v1/accounts:signInWithPassword", use: signInWithPassword)
        clients.client(.post, "v1/accounts:createAuthUri", use: createAuthUri)
        clients.client(.post, "v1/accounts:update", use: update)
    }

    struct SignUpRequest: Decodable {
        var email: String?
        var password: String?
        var idToken: String?
        var displayName: String?
        /// Read only to be bounded: sign-up does not store a photo URL.
        var photoUrl: String?
        var tenantId: String?
        var localId: String?
    }

    struct SignUpResponse: Encodable, Sendable {
        var kind = Kind.signUp
        var localId: String
        var email: String?
        var displayName: String?
        var idToken: String
        var refreshToken: String
        var expiresIn = String(IDTokenIssuer.lifetime)
    }

    /// Anonymous sign-up without credentials (docs/protocol/accounts.md#anonymous-sign-up); email/password
    /// sign-up, or with `idToken` the link of email/password to that user, which keeps its id
    /// (docs/protocol/accounts.md#adding-email-and-password).
    @Sendable func signUp(_ request: Request, context: ClientOrAdminContext) async throws -> JSONResponse<
        SignUpResponse
    > {
        guard case .client = context.caller else {
            throw FirebaseError.notImplemented("Privileged accounts:signUp (use POST /v1/projects/{p}/accounts)")
        }
        let body = try await request.decodeJSON(SignUpRequest.self, context: context)
        if body.localId != nil { throw FirebaseError.invalid(.unexpectedParameter, "User ID") }
        let requested = Scope(wire: body.tenantId)
        try Credentials.checkProfile(displayName: body.displayName, photoUrl: body.photoUrl)
        let issued: SessionTokens.Issued
        if body.email == nil, body.password == nil, body.idToken == nil {
            issued = try await tokens.signUpAnonymous(
                scope: requested, clientIP: tokens.clientIP(request, context), requestID: context.requestID,
                logger: context.logger)
        } else {
            // `{"email":"","password":""}` is not anonymous: INVALID_EMAIL
            // (docs/protocol/accounts.md#anonymous-sign-up).
            guard let rawEmail = body.email else { throw FirebaseError.invalid(.missingEmail) }
            guard let email = Credentials.normalizedEmail(rawEmail) else {
                throw FirebaseError.invalid(.invalidEmail)
            }
            guard let password = body.password, !password.isEmpty else {
                throw FirebaseError.invalid(.missingPassword)
            }
            try Credentials.checkPassword(password)
            var localId: String?
            var scope = requested
            if body.idToken != nil {
                let (verified, user) = try await tokens.verify(
                    idToken: body.idToken, requested: requested, requestID: context.requestID, logger: context.logger
                )
                try tokens.requireRecentSignIn(verified, user: user)
                try await tokens.waitPastIssueSecond(of: verified)
                localId = user.localId
                scope = verified.scope
            }
            let clientIP = tokens.clientIP(request, context)
            issued = try await tokens.passwordGate.pass(clientIP) { refusedByGate in
                try await tokens.startSession(
                    InternalEndpoints.signUpPassword, requestID: context.requestID, logger: context.logger
                ) { session in
                    var body = SignUpPasswordRequest(
                        scope: scope, email: email, password: password, displayName: body.displayName,
                        localId: localId, session: session)
                    body.clientIP = clientIP
                    body.refusedByGate = refusedByGate
                    return body
                }
            }
        }
        return JSONResponse(
            SignUpResponse(
                localId: issued.user.localId, email: issued.user.email, displayName: issued.user.displayName,
                idToken: issued.idToken, refreshToken: issued.refreshToken))
    }

    struct PasswordSignInRequest: Decodable {
        var email: String?
        var password: String?
        var tenantId: String?
        var idToken: String?
        var pendingIdToken: String?
    }

    struct PasswordSignInResponse: Encodable, Sendable {
        var kind = Kind.signInWithPassword
        var localId: String
        var email: String
        var displayName: String
        var registered = true
        var idToken: String?
        var refreshToken: String?
        var expiresIn: String? = String(IDTokenIssuer.lifetime)
        /// A user with second factors (docs/protocol/mfa.md#signing-in): these instead of tokens.
        var mfaPendingCredential: String?
        var mfaInfo: [MFAEnrollmentInfo]?
    }

    @Sendable func signInWithPassword(_ request: Request, context: ClientContext) async throws
        -> JSONResponse<PasswordSignInResponse>
    {
        let body = try await request.decodeJSON(PasswordSignInRequest.self, context: context)
        return try await tokens.switchesFirst(Scope(wire: body.tenantId), .password, context: context) {
            // reCAPTCHA is never enforced (recaptchaConfig says OFF), so a `captchaResponse` an SDK sends is
            // ignored like any other field it may send (docs/protocol/sdks.md#what-the-sdks-depend-on).
            if body.idToken != nil || body.pendingIdToken != nil {
                throw FirebaseError.notImplemented("signInWithPassword with idToken or pendingIdToken")
            }
            // An empty address is a malformed one, as for sign-up (the emulator's password:96).
            guard let rawEmail = body.email else { throw FirebaseError.invalid(.missingEmail) }
            guard let email = Credentials.normalizedEmail(rawEmail) else { throw FirebaseError.invalid(.invalidEmail) }
            guard let password = body.password, !password.isEmpty else { throw FirebaseError.invalid(.missingPassword) }
            let scope = Scope(wire: body.tenantId)
            let clientIP = tokens.clientIP(request, context)
            let issued: SessionTokens.Issued
            do {
                issued = try await tokens.passwordGate.pass(clientIP) { refusedByGate in
                    try await tokens.startSession(
                        InternalEndpoints.signInWithPassword, requestID: context.requestID, logger: context.logger
                    ) { session in
                        var body = SignInWithPasswordRequest(
                            scope: scope, email: email, password: password, session: session)
                        body.clientIP = clientIP
                        body.refusedByGate = refusedByGate
                        return body
                    }
                }
            } catch let pending as SecondFactorRequired {
                return JSONResponse(
                    PasswordSignInResponse(
                        localId: pending.user.localId, email: pending.user.email ?? email,
                        displayName: pending.user.displayName ?? "", expiresIn: nil,
                        mfaPendingCredential: pending.pendingCredential, mfaInfo: pending.challenge.mfaInfo))
            }
            return JSONResponse(
                PasswordSignInResponse(
                    localId: issued.user.localId, email: issued.user.email ?? email,
                    displayName: issued.user.displayName ?? "",
                    idToken: issued.idToken, refreshToken: issued.refreshToken))
        }
    }

    struct CreateAuthUriRequest: Decodable {
        var identifier: String?
        var continueUri: String?
        var providerId: String?
        var tenantId: String?
        /// With `providerId`: parameters for the provider's authorization request.
        var customParameter: [String: String]?
        /// With `providerId`: more scopes, as a list (`"a,b"` or `"a b"`) or the legacy SDK's JSON
        /// object of provider id to list (`{"google.com":"a,b"}`).
        var oauthScope: String?
        /// With `providerId`: the session id the redemption will present (else Tessera makes one).
        var sessionId: String?
    }

    struct CreateAuthUriResponse: Encodable, Sendable {
        var kind = Kind.createAuthUri
        var registered: Bool?
        var allProviders: [String]?
        var signinMethods: [String]?
        var authUri: String?
        var providerId: String?
        var sessionId: String
    }

    /// `accounts:createAuthUri`: for an email, what it can sign in with (under email enumeration
    /// protection only `kind` and `sessionId`, docs/design-notes.md); for a `providerId`, a sign-in with
    /// that provider (docs/oauth-flows.md): `authUri` sends the browser to the provider, whose answer
    /// comes back to Tessera's handler and on to `continueUri` (an authorized domain's), where the app
    /// redeems it with `signInWithIdp` (`requestUri` = that URL, `sessionId`).
    @Sendable func createAuthUri(_ request: Request, context: ClientContext) async throws
        -> JSONResponse<CreateAuthUriResponse>
    {
        let body = try await request.decodeJSON(CreateAuthUriRequest.self, context: context)
        if let providerId = body.providerId {
            return JSONResponse(try await startProviderSignIn(providerId, body, request: request, context: context))
        }
        guard let identifier = body.identifier, !identifier.isEmpty else {
            throw FirebaseError.invalid(.missingIdentifier)
        }
        guard let continueUri = body.continueUri, !continueUri.isEmpty else {
            throw FirebaseError.invalid(.missingContinueUri)
        }
        guard let url = URL(string: continueUri), url.scheme != nil else {
            throw FirebaseError.invalid(.invalidContinueUri)
        }
        guard let email = Credentials.normalizedEmail(identifier) else {
            throw FirebaseError.invalid(.invalidIdentifier)
        }
        let answer = try await tokens.directory.call(
            InternalEndpoints.authMethods, AuthMethodsRequest(scope: Scope(wire: body.tenantId), email: email),
            requestID: context.requestID, logger: context.logger)
        // The app's own session id comes back as it was sent (docs/protocol/accounts.md#end-user-endpoints),
        // else a new one.
        let sessionId = try Self.sessionId(body.sessionId) ?? Secrets.randomAlphanumeric(27)
        guard !answer.protected else { return JSONResponse(CreateAuthUriResponse(sessionId: sessionId)) }
        return JSONResponse(
            CreateAuthUriResponse(
                registered: answer.registered, allProviders: answer.allProviders, signinMethods: answer.signinMethods,
                sessionId: sessionId))
    }

    func startProviderSignIn(
        _ providerId: String, _ body: CreateAuthUriRequest, request: Request, context: ClientContext
    ) async throws -> CreateAuthUriResponse {
        guard FederatedProviders.kind(of: providerId) != nil else { throw FirebaseError.invalid(.invalidProviderId) }
        guard let continueUri = body.continueUri, !continueUri.isEmpty else {
            throw FirebaseError.invalid(.missingContinueUri)
        }
        let links = try await tokens.currentLinks(requestID: context.requestID, logger: context.logger)
        guard WebURL(continueUri) != nil else { throw FirebaseError.invalid(.invalidContinueUri) }
        guard let checked = try links.checkContinueURL(continueUri) else {
            throw FirebaseError.invalid(.missingContinueUri)
        }
        let handler = try AuthHandlerController.handlerURL(configuration: configuration, request: request)
        try Self.checkAnswerTarget(checked)
        let sessionId = try Self.sessionId(body.sessionId) ?? Base64URL.encode(Secrets.randomBytes(24))
        var scopes: [String] = []
        if let raw = body.oauthScope, !raw.isEmpty {
            var list = raw
            if let data = raw.data(using: .utf8),
                case .object(let byProvider)? = try? JSONDecoder().decode(
                    JSONValue.self, from: data)
            {
                list = byProvider[providerId]?.stringValue ?? ""
            }
            scopes = list.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        }
        let authUri = try await flows.start(
            AuthorizationFlows.Start(
                scope: Scope(wire: body.tenantId), providerId: providerId, scopes: scopes,
                customParameters: body.customParameter ?? [:],
                redirectUri: handler,
                continueUri: checked, sessionHashes: [AuthorizationFlows.hexDigest(sessionId)], client: nil,
                clientIP: tokens.clientIP(request, context)),
            requestID: context.requestID, logger: context.logger)
        return CreateAuthUriResponse(authUri: authUri, providerId: providerId, sessionId: sessionId)
    }

    /// The session id an app sent to `createAuthUri`, nil when it sent none.
    static func sessionId(_ sent: String?) throws -> String? {
        guard let sent, !sent.isEmpty else { return nil }
        guard sent.utf8.count <= 256 else { throw FirebaseError.invalid(.invalidIdpResponse, "sessionId is too long.") }
        return sent
    }

    /// The provider's answer comes to the handler, which sends it on to `continueUri` with the answer
    /// appended to its query: so not to a handler (it would answer itself), not to a URL with a
    /// fragment (the answer would land in it), not to one whose own query names `state`, `code` or
    /// `error` (the app's would be read instead of the provider's).
    static func checkAnswerTarget(_ continueUri: String) throws {
        guard let url = WebURL(continueUri) else { throw FirebaseError.invalid(.invalidContinueUri) }
        guard url.fragment == nil else {
            throw FirebaseError.invalid(
                .invalidContinueUri, "continueUri cannot have a fragment: the answer is added to its query.")
        }
        if url.path == AuthHandlerController.handlerPath || url.path == AuthHandlerController.emulatorHandlerPath {
            throw FirebaseError.invalid(.invalidContinueUri, "continueUri is Tessera's handler; name the app's page.")
        }
        if let fields = url.query.flatMap({ FormURLEncoded.parse(String($0)) }),
            fields.keys.contains(
                where: ["state", "code", "error", "id_token", "oauth_token", "oauth_verifier"].contains)
        {
            throw FirebaseError.invalid(
                .invalidContinueUri, "continueUri's query cannot name the provider's answer's fields (state, code, …).")
        }
    }

    struct UpdateRequest: Decodable {
        var idToken: String?
        var oobCode: String?
        var tenantId: String?
        var email: String?
        var password: String?
        var displayName: String?
        var photoUrl: String?
        var deleteAttribute: [String]?
        var deleteProvider: [String]?
        var returnSecureToken: Bool?
        // Privileged-only fields: a client sending them is refused (docs/protocol/accounts.md#end-user-endpoints).
        var localId: String?
        var customAttributes: String?
        var disableUser: Bool?
        var emailVerified: Bool?
        var validSince: JSONValue?
        var provider: JSONValue?
        var upgradeToFederatedLogin: Bool?
        var linkProviderUserInfo: JSONValue?
    }

    static let deletableAttributes: Set<String> = ["DISPLAY_NAME", "PHOTO_URL", "EMAIL", "PASSWORD"]

    /// An end user's `accounts:update` with its ID token (docs/protocol/accounts.md#end-user-endpoints,
    /// #adding-email-and-password, #password-change-and-revocation, #recent-sign-in).
    @Sendable func update(_ request: Request, context: ClientOrAdminContext) async throws -> Response {
        if case .privileged(let authorization) = context.caller {
            return try await tokens.forwardPrivileged(
                request, context: context, authorization: authorization, verb: "update")
        }
        return try await clientUpdate(request, context: context).response(from: request, context: context)
    }

    func clientUpdate(_ request: Request, context: ClientOrAdminContext) async throws -> JSONResponse<
        SetAccountInfoResponse
    > {
        let body = try await request.decodeJSON(UpdateRequest.self, context: context)
        return try await tokens.switchesFirst(Scope(wire: body.tenantId), context: context) {
            if body.customAttributes != nil { throw FirebaseError.invalid(.insufficientPermission) }
            if body.disableUser != nil || body.emailVerified != nil {
                throw FirebaseError.invalid(.operationNotAllowed)
            }
            if body.provider != nil || body.upgradeToFederatedLogin != nil {
                throw FirebaseError.notImplemented("accounts:update with provider or upgradeToFederatedLogin")
            }
            if let oobCode = body.oobCode {
                return try await applyOobCode(
                    oobCode, scope: Scope(wire: body.tenantId),
                    recoverLinkPrefix: OobController.recoverLinkPrefix(
                        configuration, scope: Scope(wire: body.tenantId), request: request),
                    context: context)
            }
            let deleteAttribute = body.deleteAttribute ?? []
            if let unknown = deleteAttribute.first(where: { !Self.deletableAttributes.contains($0) }) {
                if unknown == "PROVIDER" || unknown == "RAW_USER_INFO" {
                    throw FirebaseError.notImplemented("deleteAttribute \(unknown)")
                }
                throw FirebaseError.invalidArgument("Invalid value at 'delete_attribute': \(unknown)")
            }
            var email: String?
            if let raw = body.email {
                guard let normalized = Credentials.normalizedEmail(raw) else {
                    throw FirebaseError.invalid(.invalidEmail)
                }
                email = normalized
            }
            if let password = body.password { try Credentials.checkPassword(password) }
            try Credentials.checkProfile(displayName: body.displayName, photoUrl: body.photoUrl)
            let deleteProvider = body.deleteProvider ?? []
            let (verified, user) = try await tokens.verify(
                idToken: body.idToken, requested: Scope(wire: body.tenantId), requestID: context.requestID,
                logger: context.logger)
            // Linking an identity without its provider's proof needs an admin (production: an OAuth
            // credential); from an end user it would let anyone claim someone's Google account
            // before they first sign in (docs/design-notes.md, "Where Tessera differs from the
            // emulator, on purpose").
            if body.linkProviderUserInfo != nil {
                throw FirebaseError.invalid(
                    .insufficientPermission, "Only authenticated requests can specify linkProviderUserInfo.")
            }
            let sensitive =
                (email != nil && email != user.email) || body.password != nil || deleteAttribute.contains("EMAIL")
                || deleteAttribute.contains("PASSWORD") || !deleteProvider.isEmpty
            if sensitive {
                try tokens.requireRecentSignIn(verified, user: user)
            }
            // `validSince` (any value: its presence asks for it) ends the user's other sessions and
            // answers fresh tokens, as a password change does; it needs no recent sign-in.
            let revokeSessions = body.validSince != nil
            if sensitive || revokeSessions { try await tokens.waitPastIssueSecond(of: verified) }
            let (refreshToken, session) = tokens.newSession()
            let answer = try await tokens.directory.call(
                InternalEndpoints.updateAccount,
                UpdateAccountRequest(
                    scope: verified.scope, localId: user.localId, displayName: body.displayName,
                    photoUrl: body.photoUrl, deleteAttribute: deleteAttribute, email: email, password: body.password,
                    deleteProvider: deleteProvider, currentSignInProvider: verified.signInProvider, session: session,
                    revokeSessions: revokeSessions,
                    recoverLinkPrefix: OobController.recoverLinkPrefix(
                        configuration, scope: verified.scope, request: request)),
                requestID: context.requestID, logger: context.logger)
            var response = SetAccountInfoResponse(user: answer.user)
            response.newEmail = email
            if let newSession = answer.session {
                response.idToken = try tokens.issuer.mint(user: answer.user, session: newSession)
                tokens.issuer.countIssued("refresh_token", provider: newSession.signInProvider)
                response.refreshToken = refreshToken
                response.expiresIn = String(IDTokenIssuer.lifetime)
            }
            return JSONResponse(response)
        }
    }

    struct IDTokenRequest: Decodable {
        var idToken: String?
        var tenantId: String?
    }

    @Sendable func lookup(_ request: Request, context: ClientOrAdminContext) async throws -> Response {
        if case .privileged(let authorization) = context.caller {
            return try await tokens.forwardPrivileged(
                request, context: context, authorization: authorization, verb: "lookup")
        }
        let body = try await request.decodeJSON(IDTokenRequest.self, context: context)
        let (_, user) = try await tokens.verify(
            idToken: body.idToken, requested: Scope(wire: body.tenantId), requestID: context.requestID,
            logger: context.logger, withFactors: true)
        return try JSONResponse(LookupResponse(users: [user])).response(from: request, context: context)
    }

    @Sendable func delete(_ request: Request, context: ClientOrAdminContext) async throws -> Response {
        if case .privileged(let authorization) = context.caller {
            return try await tokens.forwardPrivileged(
                request, context: context, authorization: authorization, verb: "delete")
        }
        let body = try await request.decodeJSON(IDTokenRequest.self, context: context)
        return try await tokens.switchesFirst(Scope(wire: body.tenantId), context: context) {
            let (verified, user) = try await tokens.verify(
                idToken: body.idToken, requested: Scope(wire: body.tenantId), requestID: context.requestID,
                logger: context.logger)
            // Self-deletion needs a recent sign-in (docs/protocol/accounts.md#accounts-and-providers);
            // anonymous users are exempt.
            try tokens.requireRecentSignIn(verified, user: user)
            _ = try await tokens.directory.call(
                InternalEndpoints.deleteAccount, AccountRequest(scope: verified.scope, localId: user.localId),
                requestID: context.requestID, logger: context.logger)
            return try JSONResponse(DeleteResponse()).response(from: request, context: context)
        }
    }

    /// `accounts:update{oobCode}`: applies a VERIFY_EMAIL, VERIFY_AND_CHANGE_EMAIL or RECOVER_EMAIL
    /// code (docs/protocol/accounts.md#emailverified).
    func applyOobCode(
        _ code: String, scope: Scope, recoverLinkPrefix: String?, context: some TokenRequestContext
    ) async throws -> JSONResponse<SetAccountInfoResponse> {
        let answer = try await tokens.directory.call(
            InternalEndpoints.applyOobCode,
            ApplyOobCodeRequest(scope: scope, oobCode: code, recoverLinkPrefix: recoverLinkPrefix),
            requestID: context.requestID, logger: context.logger)
        guard let user = answer.user else { throw FirebaseError.internal }
        var response = SetAccountInfoResponse(user: user)
        response.newEmail = answer.newEmail
        return JSONResponse(response)
    }
}

/// Written by hand: the answer of every password sign-in (the same members as `JSONEncoder` writes).
extension AccountsController.PasswordSignInResponse: DirectJSONEncodable {
    func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("kind", kind)
            object.member("localId", localId)
            object.member("email", email)
            object.member("displayName", displayName)
            object.member("registered", registered)
            object.member("idToken", idToken)
            object.member("refreshToken", refreshToken)
            object.member("expiresIn", expiresIn)
            object.member("mfaPendingCredential", mfaPendingCredential)
            object.member("mfaInfo", mfaInfo)
        }
    }
}
