import Foundation
import Hummingbird
import Logging
import TesseraShared

/// Phone sign-in (docs/protocol/phone.md): `accounts:sendVerificationCode` texts a code, and
/// `accounts:signInWithPhoneNumber` signs in with it (v3: `sendVerificationCode`, `verifyPhoneNumber`).
/// App verification: a reCAPTCHA token, when the operator gave reCAPTCHA keys (`AppVerifier`); Apple's APNs
/// receipts and Play Integrity tokens cannot be checked (docs/protocol/phone.md#app-verification).
struct PhoneController {
    let tokens: SessionTokens

    func addRoutes(to clients: RouterGroup<TokenContext>) {
        clients.client(.post, "v1/accounts:sendVerificationCode", use: sendCode)
        clients.client(.post, "v1/accounts:signInWithPhoneNumber", use: signIn)
    }

    struct SendCodeRequest: Decodable {
        var phoneNumber: String?
        var recaptchaToken: String?
        var tenantId: String?
    }

    struct SendCodeResponse: Encodable, Sendable {
        var sessionInfo: String
    }

    @Sendable func sendCode(_ request: Request, context: ClientContext) async throws -> JSONResponse<SendCodeResponse> {
        let body = try await request.decodeJSON(SendCodeRequest.self, context: context)
        // Production answers a missing number as a malformed one (the emulator's sendVerificationCode).
        guard let phoneNumber = body.phoneNumber, !phoneNumber.isEmpty, phoneNumber.utf8.count <= 64 else {
            throw FirebaseError.invalid(.invalidPhoneNumber, "Invalid format.")
        }
        var call = SendPhoneCodeRequest(scope: Scope(wire: body.tenantId), phoneNumber: phoneNumber)
        call.clientIP = tokens.clientIP(request, context)
        call.appRefusal = try await tokens.appVerifier.check(
            token: body.recaptchaToken, clientIP: call.clientIP, logger: context.logger)
        let answer = try await tokens.directory.call(
            InternalEndpoints.sendPhoneCode, call, requestID: context.requestID, logger: context.logger)
        return JSONResponse(SendCodeResponse(sessionInfo: answer.sessionInfo))
    }

    struct SignInRequest: Decodable {
        var sessionInfo: String?
        var code: String?
        var idToken: String?
        var temporaryProof: String?
        var tenantId: String?
    }

    struct SignInResponse: Encodable, Sendable {
        var localId: String
        var phoneNumber: String?
        var isNewUser: Bool
        var idToken: String
        var refreshToken: String
        var expiresIn = String(IDTokenIssuer.lifetime)
    }

    @Sendable func signIn(_ request: Request, context: ClientContext) async throws -> JSONResponse<SignInResponse> {
        let body = try await request.decodeJSON(SignInRequest.self, context: context)
        let requested = Scope(wire: body.tenantId)
        if body.temporaryProof != nil {
            throw FirebaseError.notImplemented("signInWithPhoneNumber with a temporaryProof")
        }
        guard let sessionInfo = body.sessionInfo, !sessionInfo.isEmpty, sessionInfo.utf8.count <= 256 else {
            throw FirebaseError.invalid(.missingSessionInfo)
        }
        guard let code = body.code, !code.isEmpty else { throw FirebaseError.invalid(.missingCode) }
        var scope = requested
        var linkTo: String?
        if body.idToken != nil {
            let (verified, user) = try await tokens.verify(
                idToken: body.idToken, requested: requested, requestID: context.requestID, logger: context.logger)
            linkTo = user.localId
            scope = verified.scope
        }
        let clientIP = tokens.clientIP(request, context)
        let (issued, answer) = try await tokens.startSession(
            answering: InternalEndpoints.signInWithPhoneNumber, requestID: context.requestID, logger: context.logger
        ) { session in
            var call = SignInWithPhoneRequest(
                scope: scope, sessionInfo: sessionInfo, code: String(code.prefix(16)), linkTo: linkTo,
                session: session)
            call.clientIP = clientIP
            return call
        }
        return JSONResponse(
            SignInResponse(
                localId: issued.user.localId, phoneNumber: issued.user.phoneNumber, isNewUser: answer.isNewUser,
                idToken: issued.idToken, refreshToken: issued.refreshToken))
    }
}
