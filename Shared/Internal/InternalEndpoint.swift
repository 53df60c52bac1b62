import HTTPTypes
import Hummingbird

/// One route of the internal API: its method and path, and the types of its body and its answer. The
/// token service and the worker call it with `DirectoryClient.call` / `get`, and the directory serves
/// it with `RouterGroup.on`, through the same value: a path, the body sent to it and the answer read
/// from it cannot disagree, because the compiler checks each side against the one declaration in
/// `InternalEndpoints`.
public struct InternalEndpoint<Body: Sendable, Answer: Sendable>: Sendable {
    public let method: HTTPRequest.Method
    public let path: String

    /// A POST endpoint.
    init(_ path: String) {
        self.init(.post, path)
    }

    init(_ method: HTTPRequest.Method, _ path: String) {
        self.method = method
        self.path = path
    }
}

/// The body of a GET endpoint: none.
public struct NoBody: Sendable {}

/// The internal API (docs/architecture.md, "Two planes, and the internal API").
public enum InternalEndpoints {
    public static let status = InternalEndpoint<NoBody, DirectoryStatus>(.get, "/internal/v1/status")
    public static let signUpAnonymous = InternalEndpoint<SignUpAnonymousRequest, SessionCreatedResponse>(
        "/internal/v1/accounts:signUpAnonymous")
    public static let getAccount = InternalEndpoint<AccountRequest, AccountResponse>("/internal/v1/accounts:get")
    public static let deleteAccount = InternalEndpoint<AccountRequest, EmptyObject>("/internal/v1/accounts:delete")
    public static let rotateRefreshToken = InternalEndpoint<RotateRefreshTokenRequest, RotateRefreshTokenResponse>(
        "/internal/v1/refreshTokens:rotate")
    public static let signUpPassword = InternalEndpoint<SignUpPasswordRequest, SessionCreatedResponse>(
        "/internal/v1/accounts:signUpPassword")
    public static let signInWithPassword = InternalEndpoint<SignInWithPasswordRequest, SessionCreatedResponse>(
        "/internal/v1/accounts:signInWithPassword")
    public static let authMethods = InternalEndpoint<AuthMethodsRequest, AuthMethodsResponse>(
        "/internal/v1/accounts:authMethods")
    public static let updateAccount = InternalEndpoint<UpdateAccountRequest, UpdateAccountResponse>(
        "/internal/v1/accounts:update")
    public static let sendOobCode = InternalEndpoint<SendOobCodeRequest, SendOobCodeResponse>(
        "/internal/v1/accounts:sendOobCode")
    public static let resetPassword = InternalEndpoint<ResetPasswordRequest, OobCodeResponse>(
        "/internal/v1/accounts:resetPassword")
    public static let applyOobCode = InternalEndpoint<ApplyOobCodeRequest, OobCodeResponse>(
        "/internal/v1/accounts:applyOobCode")
    public static let checkAdmin = InternalEndpoint<CheckAdminRequest, EmptyObject>("/internal/v1/admin:check")
    public static let idpConfig = InternalEndpoint<IdpConfigRequest, IdpConfigResponse>(
        "/internal/v1/idpConfigs:get")
    public static let signInWithIdp = InternalEndpoint<SignInWithIdpRequest, SignInWithIdpResponse>(
        "/internal/v1/accounts:signInWithIdp")
    public static let signInWithCustomToken = InternalEndpoint<
        SignInWithCustomTokenRequest, SignInWithCustomTokenResponse
    >("/internal/v1/accounts:signInWithCustomToken")
    public static let signInWithEmailLink = InternalEndpoint<SignInWithEmailLinkRequest, SignInWithEmailLinkResponse>(
        "/internal/v1/accounts:signInWithEmailLink")
    /// Whether a scope takes sign-ins of a kind (docs/design-notes.md, "Order of checks"): asked by the
    /// token service before it answers a request's input errors, which come after the scope's switches.
    public static let startTOTPEnrollment = InternalEndpoint<StartTOTPEnrollmentRequest, StartTOTPEnrollmentResponse>(
        "/internal/v1/mfaEnrollment:startTotp")
    public static let finalizeTOTPEnrollment = InternalEndpoint<FinalizeTOTPEnrollmentRequest, SessionCreatedResponse>(
        "/internal/v1/mfaEnrollment:finalizeTotp")
    public static let withdrawMFA = InternalEndpoint<WithdrawMFARequest, SessionCreatedResponse>(
        "/internal/v1/mfaEnrollment:withdraw")
    public static let finalizeMFASignIn = InternalEndpoint<FinalizeMFASignInRequest, SessionCreatedResponse>(
        "/internal/v1/mfaSignIn:finalize")
    public static let startPhoneEnrollment = InternalEndpoint<StartPhoneEnrollmentRequest, SendPhoneCodeResponse>(
        "/internal/v1/mfaEnrollment:startPhone")
    public static let finalizePhoneEnrollment = InternalEndpoint<
        FinalizePhoneEnrollmentRequest, SessionCreatedResponse
    >("/internal/v1/mfaEnrollment:finalizePhone")
    public static let startPhoneMFASignIn = InternalEndpoint<StartPhoneMFASignInRequest, SendPhoneCodeResponse>(
        "/internal/v1/mfaSignIn:startPhone")
    public static let finalizePhoneMFASignIn = InternalEndpoint<FinalizePhoneMFASignInRequest, SessionCreatedResponse>(
        "/internal/v1/mfaSignIn:finalizePhone")
    public static let sendPhoneCode = InternalEndpoint<SendPhoneCodeRequest, SendPhoneCodeResponse>(
        "/internal/v1/phone:sendCode")
    public static let signInWithPhoneNumber = InternalEndpoint<SignInWithPhoneRequest, SignedInResponse>(
        "/internal/v1/accounts:signInWithPhoneNumber")
    public static let checkScope = InternalEndpoint<CheckScopeRequest, EmptyObject>("/internal/v1/scopes:check")
    public static let createAuthFlow = InternalEndpoint<CreateAuthFlowRequest, EmptyObject>(
        "/internal/v1/authFlows:create")
    public static let getAuthFlow = InternalEndpoint<AuthFlowRequest, AuthFlowResponse>("/internal/v1/authFlows:get")
    public static let consumeAuthFlow = InternalEndpoint<AuthFlowRequest, AuthFlowResponse>(
        "/internal/v1/authFlows:consume")
    public static let authorizedDomains = InternalEndpoint<NoBody, AuthorizedDomainsResponse>(
        .get, "/internal/v1/projectConfig:authorizedDomains")
    public static let cleanupLease = InternalEndpoint<CleanupLeaseRequest, CleanupLeaseResponse>(
        "/internal/v1/cleanup:lease")
    public static let cleanupDeleteDue = InternalEndpoint<CleanupDeleteDueRequest, CleanupDeleteDueResponse>(
        "/internal/v1/cleanup:deleteDue")
    public static let cleanupHousekeeping = InternalEndpoint<HousekeepingRequest, HousekeepingResponse>(
        "/internal/v1/cleanup:housekeeping")
    public static let cleanupFinish = InternalEndpoint<CleanupFinishRequest, EmptyObject>(
        "/internal/v1/cleanup:finish")
}

extension RouterGroup {
    /// Serves a POST endpoint: the body decoded as its `Body` (`Request.decodeJSON`), the handler's
    /// answer sent as its `Answer` (`JSONResponse`).
    @discardableResult
    public func on<Body: Decodable & Sendable, Answer: Encodable & Sendable>(
        _ endpoint: InternalEndpoint<Body, Answer>,
        use handler: @escaping @Sendable (Body, Context) async throws -> Answer
    ) -> Self {
        precondition(endpoint.method == .post, "a body is posted")
        return post(RouterPath(endpoint.path)) { request, context in
            JSONResponse(try await handler(try await request.decodeJSON(Body.self, context: context), context))
        }
    }

    /// Serves a GET endpoint.
    @discardableResult
    public func on<Answer: Encodable & Sendable>(
        _ endpoint: InternalEndpoint<NoBody, Answer>, use handler: @escaping @Sendable (Context) async throws -> Answer
    ) -> Self {
        precondition(endpoint.method == .get, "a GET has no body")
        return get(RouterPath(endpoint.path)) { _, context in JSONResponse(try await handler(context)) }
    }
}
