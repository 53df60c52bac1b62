import Foundation
import Hummingbird
import Logging
import TesseraShared

/// Second factors (docs/protocol/mfa.md): `v2/accounts/mfaEnrollment:{start,finalize,withdraw}` for
/// a signed-in user, and `v2/accounts/mfaSignIn:finalize` for a sign-in that answered
/// `mfaPendingCredential`, with `v2/accounts/mfaSignIn:start` texting a phone factor's code first. TOTP and
/// phone (SMS) factors.
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
        struct PhoneEnrollmentInfo: Decodable {
            var phoneNumber: String?
            var recaptchaToken: String?
        }
        struct PhoneSignInInfo: Decodable {
            var recaptchaToken: String?
        }
        struct PhoneVerificationInfo: Decodable {
            var sessionInfo: String?
            var code: String?
        }
        var totpVerificationInfo: TOTPVerificationInfo?
        var phoneEnrollmentInfo: PhoneEnrollmentInfo?
        var phoneVerificationInfo: PhoneVerificationInfo?
        var phoneSignInInfo: PhoneSignInInfo?
    }

    /// A phone factor's code and its session, or the refusal of a missing part.
    static func phoneCode(_ info: Body.PhoneVerificationInfo) throws -> (sessionInfo: String, code: String) {
        guard let code = info.code, !code.isEmpty else { throw FirebaseError.invalid(.missingCode) }
        guard let sessionInfo = info.sessionInfo, !sessionInfo.isEmpty, sessionInfo.utf8.count <= 256 else {
            throw FirebaseError.invalid(.missingSessionInfo)
        }
        return (sessionInfo, String(code.prefix(16)))
    }

    /// `phoneSessionInfo` / `phoneResponseInfo` of the start calls.
    struct PhoneSession: Encodable, Sendable {
        struct Info: Encodable, Sendable {
            var sessionInfo: String
        }
        var phoneSessionInfo: Info?
        var phoneResponseInfo: Info?
    }

    /// `idToken` and `refreshToken` of the new session, as the v2 answers carry them.
    struct Tokens: Encodable, Sendable {
        var idToken: String
        var refreshToken: String

        init(_ issued: SessionTokens.Issued) {
            idToken = issued.idToken
            refreshToken = issued.refreshToken
        }
    }

    /// The name an enrolment gives its factor (empty: none), checked as a profile's display name is.
    static func factorName(_ body: Body) throws -> String? {
        let displayName = body.displayName.flatMap { $0.isEmpty ? nil : $0 }
        try Credentials.checkProfile(displayName: displayName, photoUrl: nil)
        return displayName
    }

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

    @Sendable func startEnrollment(_ request: Request, context: ClientContext) async throws -> Response {
        let body = try await request.decodeJSON(Body.self, context: context)
        guard body.totpEnrollmentInfo != nil || body.phoneEnrollmentInfo != nil else {
            throw FirebaseError.invalid(.invalidArgument, "Missing totpEnrollmentInfo or phoneEnrollmentInfo.")
        }
        let (verified, user) = try await signedInUser(body, context: context)
        try tokens.requireRecentSignIn(verified, user: user)
        if let phone = body.phoneEnrollmentInfo {
            // Production answers a missing number as a malformed one (the emulator's mfaEnrollmentStart).
            guard let number = phone.phoneNumber, !number.isEmpty, number.utf8.count <= 64 else {
                throw FirebaseError.invalid(.invalidPhoneNumber, "Invalid format.")
            }
            var call = StartPhoneEnrollmentRequest(
                scope: verified.scope, localId: verified.localId, phoneNumber: number)
            call.clientIP = tokens.clientIP(request, context)
            call.appRefusal = try await tokens.appVerifier.check(
                token: phone.recaptchaToken, clientIP: call.clientIP, logger: context.logger)
            let answer = try await tokens.directory.call(
                InternalEndpoints.startPhoneEnrollment, call, requestID: context.requestID, logger: context.logger)
            return try JSONResponse(PhoneSession(phoneSessionInfo: .init(sessionInfo: answer.sessionInfo)))
                .response(from: request, context: context)
        }
        return try JSONResponse(
            try await tokens.directory.call(
                InternalEndpoints.startTOTPEnrollment,
                StartTOTPEnrollmentRequest(scope: verified.scope, localId: verified.localId),
                requestID: context.requestID, logger: context.logger)
        ).response(from: request, context: context)
    }

    @Sendable func finalizeEnrollment(_ request: Request, context: ClientContext) async throws -> JSONResponse<Tokens> {
        let body = try await request.decodeJSON(Body.self, context: context)
        if let phone = body.phoneVerificationInfo {
            let (verified, _) = try await signedInUser(body, context: context)
            let (sessionInfo, code) = try Self.phoneCode(phone)
            let displayName = try Self.factorName(body)
            let issued = try await tokens.startSession(
                InternalEndpoints.finalizePhoneEnrollment, requestID: context.requestID, logger: context.logger
            ) { session in
                FinalizePhoneEnrollmentRequest(
                    scope: verified.scope, localId: verified.localId, signInProvider: verified.signInProvider,
                    sessionInfo: sessionInfo, code: code, displayName: displayName, session: session)
            }
            return JSONResponse(Tokens(issued))
        }
        guard let info = body.totpVerificationInfo else {
            throw FirebaseError.invalid(.invalidArgument, "Missing totpVerificationInfo or phoneVerificationInfo.")
        }
        let (verified, _) = try await signedInUser(body, context: context)
        guard let sessionInfo = info.sessionInfo, !sessionInfo.isEmpty else {
            throw FirebaseError.invalid(.missingSessionInfo)
        }
        guard let code = info.verificationCode, !code.isEmpty else { throw FirebaseError.invalid(.missingCode) }
        let displayName = try Self.factorName(body)
        let issued = try await tokens.startSession(
            InternalEndpoints.finalizeTOTPEnrollment, requestID: context.requestID, logger: context.logger
        ) { session in
            FinalizeTOTPEnrollmentRequest(
                scope: verified.scope, localId: verified.localId, signInProvider: verified.signInProvider,
                sessionInfo: sessionInfo, verificationCode: code, displayName: displayName, session: session)
        }
        return JSONResponse(Tokens(issued))
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
        return JSONResponse(Tokens(issued))
    }

    /// Only phone factors are started (a code is texted); a TOTP factor goes straight to `finalize`.
    @Sendable func startSignIn(_ request: Request, context: ClientContext) async throws -> JSONResponse<PhoneSession> {
        let body = try await request.decodeJSON(Body.self, context: context)
        let scope = Scope(wire: body.tenantId)
        return try await tokens.switchesFirst(scope, context: context) {
            guard let pending = body.mfaPendingCredential, !pending.isEmpty else {
                throw FirebaseError.invalid(
                    .missingMfaPendingCredential, "Request does not have MFA pending credential.")
            }
            guard let enrollmentId = body.mfaEnrollmentId, !enrollmentId.isEmpty else {
                throw FirebaseError.invalid(.missingMfaEnrollmentId, "No second factor identifier is provided.")
            }
            guard RefreshTokens.isWellFormed(pending) else { throw FirebaseError.invalid(.invalidMfaPendingCredential) }
            var call = StartPhoneMFASignInRequest(
                scope: scope, credentialHash: Secrets.tokenHash(pending), mfaEnrollmentId: enrollmentId)
            call.clientIP = tokens.clientIP(request, context)
            call.appRefusal = try await tokens.appVerifier.check(
                token: body.phoneSignInInfo?.recaptchaToken, clientIP: call.clientIP, logger: context.logger)
            let answer = try await tokens.directory.call(
                InternalEndpoints.startPhoneMFASignIn, call, requestID: context.requestID, logger: context.logger)
            return JSONResponse(PhoneSession(phoneResponseInfo: .init(sessionInfo: answer.sessionInfo)))
        }
    }

    @Sendable func finalizeSignIn(_ request: Request, context: ClientContext) async throws -> JSONResponse<Tokens> {
        let body = try await request.decodeJSON(Body.self, context: context)
        let scope = Scope(wire: body.tenantId)
        return try await tokens.switchesFirst(scope, context: context) {
            guard let pending = body.mfaPendingCredential, !pending.isEmpty else {
                throw FirebaseError.invalid(.missingCredential, "Please set MFA Pending Credential.")
            }
            if let phone = body.phoneVerificationInfo {
                let (sessionInfo, code) = try Self.phoneCode(phone)
                guard RefreshTokens.isWellFormed(pending) else {
                    throw FirebaseError.invalid(.invalidMfaPendingCredential)
                }
                let issued = try await tokens.startSession(
                    InternalEndpoints.finalizePhoneMFASignIn, requestID: context.requestID, logger: context.logger
                ) { session in
                    FinalizePhoneMFASignInRequest(
                        scope: scope, credentialHash: Secrets.tokenHash(pending), sessionInfo: sessionInfo,
                        code: code, session: session)
                }
                return JSONResponse(Tokens(issued))
            }
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
            return JSONResponse(Tokens(issued))
        }
    }
}
