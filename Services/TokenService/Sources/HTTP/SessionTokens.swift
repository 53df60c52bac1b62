import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

/// What the token service does with the directory to issue, refresh and check tokens.
struct SessionTokens: Sendable {
    let directory: DirectoryClient
    let issuer: IDTokenIssuer
    let configuration: TokenServiceConfiguration
    /// Password sign-ins and sign-ups of an address the directory just refused are refused here.
    let passwordGate: PasswordGate
    /// reCAPTCHA for the calls that text a code.
    let appVerifier: AppVerifier

    struct Issued {
        var user: UserRecord
        var idToken: String
        var refreshToken: String
    }

    /// The end user's address: the peer, or what trusted proxies say it is.
    func clientIP(_ request: Request, _ context: some TokenRequestContext) -> String? {
        configuration.clientAddress.resolve(
            peer: context.remoteAddress, forwardedFor: request.headers[values: .xForwardedFor].joined(separator: ","))
    }

    /// The action links with the project's authorized domains as they are now (the directory holds
    /// them: the project config's, or the deployment's default).
    func currentLinks(requestID: String, logger: Logger) async throws -> ActionLinks {
        var links = configuration.links
        links.authorizedDomains = try await directory.get(
            InternalEndpoints.authorizedDomains, requestID: requestID, logger: logger
        ).authorizedDomains
        return links
    }

    /// A new refresh token and what the directory stores of it.
    func newSession() -> (refreshToken: String, session: NewSession) {
        let refreshToken = RefreshTokens.generate()
        let expiresAt = Int64(Date().timeIntervalSince1970) + configuration.refreshAbsoluteTTL.wholeSeconds
        return (refreshToken, NewSession(refreshTokenHash: Secrets.tokenHash(refreshToken), expiresAt: expiresAt))
    }

    /// Runs a directory operation that starts a session and mints its tokens.
    func startSession<Body: Encodable>(
        _ endpoint: InternalEndpoint<Body, SessionCreatedResponse>, requestID: String, logger: Logger,
        _ body: (NewSession) -> Body
    ) async throws -> Issued {
        try await startSession(answering: endpoint, requestID: requestID, logger: logger, body).issued
    }

    /// The same, for an operation whose answer says more than the user and the session (whether the
    /// user is new, for a custom-token or email-link sign-in).
    func startSession<Body: Encodable, Answer: SessionAnswer>(
        answering endpoint: InternalEndpoint<Body, Answer>, requestID: String, logger: Logger,
        _ body: (NewSession) -> Body
    ) async throws -> (issued: Issued, answer: Answer) {
        let (refreshToken, session) = newSession()
        let created = try await directory.call(endpoint, body(session), requestID: requestID, logger: logger)
        // A user with second factors: no session yet, and the token generated for it is the pending
        // credential the client presents with its second factor (docs/protocol/mfa.md#signing-in).
        if let challenge = created.secondFactor {
            throw SecondFactorRequired(pendingCredential: refreshToken, challenge: challenge, user: created.user)
        }
        let idToken = try issuer.mint(user: created.user, session: created.session)
        issuer.countIssued("refresh_token", provider: created.session.signInProvider)
        return (Issued(user: created.user, idToken: idToken, refreshToken: refreshToken), created)
    }

    func signUpAnonymous(scope: Scope, clientIP: String?, requestID: String, logger: Logger) async throws
        -> Issued
    {
        try await startSession(InternalEndpoints.signUpAnonymous, requestID: requestID, logger: logger) { session in
            var body = SignUpAnonymousRequest(
                scope: scope, refreshTokenHash: session.refreshTokenHash, sessionExpiresAt: session.expiresAt)
            body.clientIP = clientIP
            return body
        }
    }

    /// A credential change sets `validSince` to the current second and revokes older tokens
    /// (docs/protocol/accounts.md#password-change-and-revocation), which can only be told apart from the
    /// caller's token by a later second: when the caller's ID token is from this very second, the change
    /// waits for the next one. Otherwise the old ID token would stay valid, and the fresh one would be
    /// byte-identical to it (same claims, deterministic RS256), which the JS SDK takes for "no new tokens"
    /// and keeps the revoked refresh token.
    func waitPastIssueSecond(of verified: IDTokenIssuer.Verified) async throws {
        let nextSecond = Double(verified.issuedAt + 1)
        let wait = nextSecond - Date().timeIntervalSince1970
        guard wait > 0 else { return }
        try await Task.sleep(for: .milliseconds(Int64((min(wait, 1) * 1000).rounded(.up)) + 5))
    }

    /// A sensitive change by a non-anonymous user needs a sign-in within the window
    /// (docs/protocol/accounts.md#accounts-and-providers, #recent-sign-in).
    func requireRecentSignIn(_ verified: IDTokenIssuer.Verified, user: UserRecord) throws {
        let age = Int64(Date().timeIntervalSince1970) - verified.authTime
        if !user.isAnonymous, age > configuration.reauthWindow.wholeSeconds {
            throw FirebaseError.invalid(.credentialTooOldLoginAgain)
        }
    }

    /// Rotates a refresh token (docs/protocol/tokens.md#token-rules): a current token is exchanged for a new
    /// pair; a retry of the just-rotated token inside the grace window gets the same new pair; anything else
    /// fails.
    func refresh(_ token: String, requestID: String, logger: Logger) async throws -> Issued {
        guard RefreshTokens.isWellFormed(token) else { throw FirebaseError.invalid(.invalidRefreshToken) }
        let successor = RefreshTokens.generate()
        let answer = try await directory.call(
            InternalEndpoints.rotateRefreshToken,
            RotateRefreshTokenRequest(
                tokenHash: Secrets.tokenHash(token), newTokenHash: Secrets.tokenHash(successor),
                sealedSuccessor: try RefreshTokens.seal(successor: successor, with: token),
                graceSeconds: configuration.refreshGrace.wholeSeconds,
                idleSeconds: configuration.refreshIdleTTL.wholeSeconds),
            requestID: requestID, logger: logger)
        let newToken: String
        switch answer.outcome {
        case .rotated:
            newToken = successor
        case .replayed:
            guard let sealed = answer.sealedSuccessor else { throw FirebaseError.internal }
            newToken = try RefreshTokens.open(sealed, with: token)
        }
        let idToken = try issuer.mint(user: answer.user, session: answer.session)
        issuer.countIssued("refresh_token", provider: answer.session.signInProvider)
        return Issued(user: answer.user, idToken: idToken, refreshToken: newToken)
    }

    /// Every check on an ID token (docs/protocol/tokens.md#checking-an-id-token): signature and claims, then the
    /// tenant asked for, the user's existence, `disabled` and `validSince`.
    func verify(
        idToken: String?, requested: Scope, requestID: String, logger: Logger, withFactors: Bool = false
    ) async throws -> (IDTokenIssuer.Verified, UserRecord) {
        guard let idToken, !idToken.isEmpty else { throw FirebaseError.invalid(.missingIdToken) }
        let verified = try issuer.verifySignatureAndClaims(idToken)
        if !requested.isProject, requested != verified.scope {
            throw FirebaseError.invalid(.tenantIdMismatch)
        }
        var account = AccountRequest(
            scope: verified.scope, localId: verified.localId, session: verified.session, issuedAt: verified.issuedAt)
        if withFactors { account.withFactors = true }
        let answer = try await directory.call(
            InternalEndpoints.getAccount, account, requestID: requestID, logger: logger)
        let user = answer.user
        if user.disabled { throw FirebaseError.invalid(.userDisabled) }
        // Whole seconds tell most revoked tokens; one of the revocation's own second is told by its
        // session, which the revocation ended (docs/design-notes.md, "Revocation is exact").
        if verified.issuedAt < user.validSince || answer.sessionEnded == true {
            throw FirebaseError.invalid(.tokenExpired)
        }
        return (verified, user)
    }
}

extension SessionTokens {
    /// Sends an admin call to the directory's `/v1/projects/{p}[/tenants/{t}]/accounts:{verb}[?query]`
    /// with the caller's `Authorization` (the directory authenticates and audits it) and address (a
    /// failed authentication counts against the caller, not this service), and relays the answer as
    /// it came. A POST carries `body`; a GET, the `query`.
    func relayAdminCall(
        method: HTTPRequest.Method = .post, project: String, scope: Scope, verb: String, query: String? = nil,
        authorization: String, body: Data?, request: Request, context: some TokenRequestContext
    ) async throws -> Response {
        let segment = CharacterSet.alphanumerics.union(["-", "_", "."])
        guard let projectSegment = project.addingPercentEncoding(withAllowedCharacters: segment),
            let tenantSegment = scope.key.addingPercentEncoding(withAllowedCharacters: segment)
        else { throw FirebaseError.invalid(.tenantNotFound) }
        var path = "/v1/projects/\(projectSegment)"
        if !scope.isProject { path += "/tenants/\(tenantSegment)" }
        path += "/accounts:\(verb)" + (query.map { "?" + $0 } ?? "")
        let (status, answer, retryAfter) = try await directory.forward(
            method: method, pathAndQuery: path, authorization: authorization, body: body,
            clientAddress: clientIP(request, context), requestID: context.requestID, logger: context.logger)
        var headers: HTTPFields = [.contentType: "application/json; charset=UTF-8"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: answer)))
    }
}

/// A directory answer that started a session: the user and the session to mint tokens for, or the
/// challenge of a user with second factors.
protocol SessionAnswer: Decodable, Sendable {
    var user: UserRecord { get }
    var session: SessionInfo { get }
    var secondFactor: SecondFactorChallenge? { get }
}

/// A first-factor sign-in that needs a second factor (docs/protocol/mfa.md#signing-in): the sign-in
/// endpoints answer `mfaPendingCredential` and `mfaInfo` instead of tokens.
struct SecondFactorRequired: Error {
    var pendingCredential: String
    var challenge: SecondFactorChallenge
    var user: UserRecord
}

extension SessionCreatedResponse: SessionAnswer {}
extension SignedInResponse: SessionAnswer {}

extension SessionTokens {
    /// Sends a privileged call to the directory's admin path for the body's tenant.
    func forwardPrivileged(_ request: Request, context: some TokenRequestContext, authorization: String, verb: String)
        async throws
        -> Response
    {
        var request = request
        let body = try await request.collectBody(upTo: 1 << 20)
        let data = Data(body.readableBytesView)
        let tenant =
            (try? JSONBody.decode(AccountsController.IDTokenRequest.self, from: data.isEmpty ? Data("{}".utf8) : data))?
            .tenantId
        return try await relayAdminCall(
            project: configuration.projectID, scope: Scope(wire: tenant), verb: verb, authorization: authorization,
            body: data, request: request, context: context)
    }
}

extension SessionTokens {
    /// Runs an end user's endpoint whose input errors come after the scope's switches
    /// (docs/design-notes.md, "Order of checks"): a `disableAuth` scope answers `PROJECT_DISABLED`,
    /// and one with `method` switched off `PASSWORD_LOGIN_DISABLED` or `OPERATION_NOT_ALLOWED`,
    /// before `MISSING_EMAIL` and the like. Only a request with an input error pays the directory's
    /// answer; the others learn the switches from the directory's own checks, as before.
    func switchesFirst<T>(
        _ scope: Scope, _ method: CheckScopeRequest.Method = .any, context: some TesseraContext,
        _ body: () async throws -> T
    ) async throws -> T {
        do {
            return try await body()
        } catch let error as FirebaseError where Self.isInputError(error) {
            _ = try await directory.call(
                InternalEndpoints.checkScope, CheckScopeRequest(scope: scope, method: method),
                requestID: context.requestID, logger: context.logger)
            throw error
        }
    }

    /// An error the token service finds in the request itself, before the directory is asked.
    static func isInputError(_ error: FirebaseError) -> Bool {
        guard error.status == .badRequest else { return false }
        let code = error.code
        return code.hasPrefix("MISSING_")
            || [ErrorCode.invalidEmail, .invalidIdToken, .invalidCustomToken, .invalidRequestUri, .weakPassword]
                .contains { $0.rawValue == code }
    }
}
