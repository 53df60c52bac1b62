import Foundation
import Hummingbird
import Logging
import TesseraShared

/// Second factors (docs/protocol/mfa.md): `v2/accounts/mfaEnrollment:{start,finalize,withdraw}` for
/// a signed-in user, and `v2/accounts/mfaSignIn:finalize` for a sign-in that answered
/// `mfaPendingCredential`. TOTP factors; phone factors answer 501 until SMS is built.
struct MultiFactorController {
    let tokens: SessionTokens

    func addRoutes(to clients: RouterGroup<TokenContext>) {
        clients.client(.post, "v2/accounts/mfaEnrollment:start", use: startEnrollment)
        clients.client(.post, "v2/accounts/mfaEnrollment:finalize", use: finalizeEnrollment)
        clients.client(.post, "v2/accounts/mfaEnrollment:withdraw", use: withdraw)
        clients.client(.post, "v2/accounts/mfaSignIn:start", use: startSignIn)
        clients.client(.post, "v2/accounts/mfaSignIn:finalize", use: finalizeSignIn)
    }

    /// First factors a second factor cannot be added to (docs/protocol/mfa.md#enrolling).
    static let ineligibleFirstFactors: Set<String> = ["anonymous", "custom", "phone", "gc.apple.com"]

    /// The fields of the SDKs' requests Tessera reads; the others (reCAPTCHA tokens, app
    /// verification) are ignored like any unknown field.
    struct Body: Decodable {
        struct TOTPVerificationInfo: Decodable {
            var sessionInfo: String?
            var verificationCode: String?
        }
        var idToken: String?
        var tenantId: String?
        var displayName: String?
        var mfaEnrollmentId: String?
        var mfaPendingCredential: String?
        var totpEnrollmentInfo: JSONValue?
        var totpVerificationInfo: TOTPVerificationInfo?
        var phoneEnrollmentInfo: JSONValue?
        var phoneVerificationInfo: JSONValue?
        var phoneSignInInfo: JSONValue?
    }

    /// `idToken` and `refreshToken` of the new session, as the v2 answers carry them.
    struct Tokens: Encodable, Sendable {
        var idToken: String
        var refreshToken: String
    }

    static let phoneFactors = "Phone (SMS) second factors"

    /// The caller's ID token, checked, from a first factor a second one may be added to.
    func signedInUser(_ body: Body, context: ClientContext) async throws -> (IDTokenIssuer.Verified, UserRecord) {
        let (verified, user) = try await tokens.verify(
            idToken: body.idToken, requested: Scope(wire: body.tenantId), requestID: context.requestID,
            logger: context.logger)
        if Self.ineligibleFirstFactors.contains(verified.signInProvider) {
            throw FirebaseError.invalid(.unsupportedFirstFactor, "MFA is not available for the given first factor.")
        }
        return (verified, user)
    }

    @Sendable func startEnrollment(_ request: Request, context: ClientContext) async throws -> JSONResponse<
        StartTOTPEnrollmentResponse
    > {
        let body = try await request.decodeJSON(Body.self, context: context)
        if body.phoneEnrollmentInfo != nil { throw FirebaseError.notImplemented(Self.phoneFactors) }
        guard body.totpEnrollmentInfo != nil else {
            throw FirebaseError.invalid(.invalidArgument, "Missing totpEnrollmentInfo or phoneEnrollmentInfo.")
        }
        let (verified, user) = try await signedInUser(body, context: context)
        try tokens.requireRecentSignIn(verified, user: user)
        return JSONResponse(
            try await tokens.directory.call(
                InternalEndpoints.startTOTPEnrollment,
                StartTOTPEnrollmentRequest(scope: verified.scope, localId: verified.localId),
                requestID: context.requestID, logger: context.logger))
    }

    @Sendable func finalizeEnrollment(_ request: Request, context: ClientContext) async throws -> JSONResponse<Tokens> {
        let body = try await request.decodeJSON(Body.self, context: context)
        if body.phoneVerificationInfo != nil { throw FirebaseError.notImplemented(Self.phoneFactors) }
        guard let info = body.totpVerificationInfo else {
            throw FirebaseError.invalid(.invalidArgument, "Missing totpVerificationInfo or phoneVerificationInfo.")
        }
        let (verified, _) = try await signedInUser(body, context: context)
        guard let sessionInfo = info.sessionInfo, !sessionInfo.isEmpty else {
            throw FirebaseError.invalid(.missingSessionInfo)
        }
        guard let code = info.verificationCode, !code.isEmpty else { throw FirebaseError.invalid(.missingCode) }
        let displayName = body.displayName.flatMap { $0.isEmpty ? nil : $0 }
        try Credentials.checkProfile(displayName: displayName, photoUrl: nil)
        let issued = try await tokens.startSession(
            InternalEndpoints.finalizeTOTPEnrollment, requestID: context.requestID, logger: context.logger
        ) { session in
            FinalizeTOTPEnrollmentRequest(
                scope: verified.scope, localId: verified.localId, signInProvider: verified.signInProvider,
                sessionInfo: sessionInfo, verificationCode: code, displayName: displayName, session: session)
        }
        return JSONResponse(Tokens(idToken: issued.idToken, refreshToken: issued.refreshToken))
    }

    @Sendable func withdraw(_ request: Request, context: ClientContext) async throws -> JSONResponse<Tokens> {
        let body = try await request.decodeJSON(Body.self, context: context)
        let (verified, _) = try await tokens.verify(
            idToken: body.idToken, requested: Scope(wire: body.tenantId), requestID: context.requestID,
            logger: context.logger)
        guard let enrollmentId = body.mfaEnrollmentId, !enrollmentId.isEmpty else {
            throw FirebaseError.invalid(.missingMfaEnrollmentId, "No second factor identifier is provided.")
        }
        let issued = try await tokens.startSession(
            InternalEndpoints.withdrawMFA, requestID: context.requestID, logger: context.logger
        ) { session in
            WithdrawMFARequest(
                scope: verified.scope, localId: verified.localId, mfaEnrollmentId: enrollmentId,
                signInProvider: verified.signInProvider, secondFactorId: verified.secondFactorId, session: session)
        }
        return JSONResponse(Tokens(idToken: issued.idToken, refreshToken: issued.refreshToken))
    }

    /// Only phone factors are started (a code is sent); a TOTP factor goes straight to `finalize`.
    @Sendable func startSignIn(_ request: Request, context: ClientContext) async throws -> Response {
        throw FirebaseError.notImplemented(Self.phoneFactors)
    }

    @Sendable func finalizeSignIn(_ request: Request, context: ClientContext) async throws -> JSONResponse<Tokens> {
        let body = try await request.decodeJSON(Body.self, context: context)
        let scope = Scope(wire: body.tenantId)
        return try await tokens.switchesFirst(scope, context: context) {
            guard let pending = body.mfaPendingCredential, !pending.isEmpty else {
                throw FirebaseError.invalid(.missingCredential, "Please set MFA Pending Credential.")
            }
            if body.phoneVerificationInfo != nil { throw FirebaseError.notImplemented(Self.phoneFactors) }
            guard let info = body.totpVerificationInfo else {
                throw FirebaseError.invalid(.invalidArgument, "MFA provider not supported!")
            }
            guard let enrollmentId = body.mfaEnrollmentId, !enrollmentId.isEmpty else {
                throw FirebaseError.invalid(.missingMfaEnrollmentId, "No second factor identifier is provided.")
            }
            guard let code = info.verificationCode, !code.isEmpty else { throw FirebaseError.invalid(.missingCode) }
            guard RefreshTokens.isWellFormed(pending) else { throw FirebaseError.invalid(.invalidMfaPendingCredential) }
            let clientIP = tokens.clientIP(request, context)
            let issued = try await tokens.startSession(
                InternalEndpoints.finalizeMFASignIn, requestID: context.requestID, logger: context.logger
            ) { session in
                var call = FinalizeMFASignInRequest(
                    scope: scope, credentialHash: Secrets.tokenHash(pending), mfaEnrollmentId: enrollmentId,
                    verificationCode: code, session: session)
                call.clientIP = clientIP
                return call
            }
            return JSONResponse(Tokens(idToken: issued.idToken, refreshToken: issued.refreshToken))
        }
    }
}
