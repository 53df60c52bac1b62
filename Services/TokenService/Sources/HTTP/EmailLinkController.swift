import Foundation
import Hummingbird
import Logging
import TesseraShared

/// `accounts:signInWithEmailLink` / v3 `emailLinkSignin` (docs/protocol/accounts.md#accounts-and-providers,
/// #end-user-endpoints, #email-link-sign-in): completes an email-link sign-in with the code from the mailed
/// link, or with `idToken` links the proven address to that user. The code is asked for with `sendOobCode`
/// `EMAIL_SIGNIN` (`OobController`).
struct EmailLinkController {
    let tokens: SessionTokens
    let configuration: TokenServiceConfiguration

    func addRoutes(to clients: RouterGroup<TokenContext>) {
        clients.client(.post, "v1/accounts:signInWithEmailLink", use: signIn)
    }

    struct SignInRequest: Decodable {
        var email: String?
        var oobCode: String?
        var idToken: String?
        var tenantId: String?
    }

    struct SignInResponse: Encodable, Sendable {
        var kind = "identitytoolkit#EmailLinkSigninResponse"
        var localId: String
        var email: String
        var isNewUser: Bool
        var idToken: String?
        var refreshToken: String?
        var expiresIn: String? = String(IDTokenIssuer.lifetime)
        /// A user with second factors (docs/protocol/mfa.md#signing-in): these instead of tokens.
        var mfaPendingCredential: String?
        var mfaInfo: [MFAEnrollmentInfo]?
    }

    @Sendable func signIn(_ request: Request, context: ClientContext) async throws -> JSONResponse<SignInResponse> {
        let body = try await request.decodeJSON(SignInRequest.self, context: context)
        return try await tokens.switchesFirst(Scope(wire: body.tenantId), .emailLink, context: context) {
            let issued: (user: UserRecord, isNewUser: Bool, idToken: String, refreshToken: String)
            do {
                issued = try await complete(
                    email: body.email, oobCode: body.oobCode, idToken: body.idToken,
                    scope: Scope(wire: body.tenantId), clientIP: tokens.clientIP(request, context),
                    requestID: context.requestID, logger: context.logger, request: request)
            } catch let pending as SecondFactorRequired {
                return JSONResponse(
                    SignInResponse(
                        localId: pending.user.localId, email: pending.user.email ?? "", isNewUser: false,
                        expiresIn: nil, mfaPendingCredential: pending.pendingCredential,
                        mfaInfo: pending.challenge.mfaInfo))
            }
            return JSONResponse(
                SignInResponse(
                    localId: issued.user.localId, email: issued.user.email ?? "", isNewUser: issued.isNewUser,
                    idToken: issued.idToken, refreshToken: issued.refreshToken))
        }
    }

    /// The operation itself, shared by the API and the hosted action page. `request`: the one links
    /// are built for (the notice to the old address of a signed-in user whose address changes).
    func complete(
        email rawEmail: String?, oobCode: String?, idToken: String?, scope requested: Scope, clientIP: String?,
        requestID: String, logger: Logger, request: Request? = nil
    ) async throws -> (user: UserRecord, isNewUser: Bool, idToken: String, refreshToken: String) {
        guard let rawEmail, !rawEmail.isEmpty else { throw FirebaseError.invalid(.missingEmail) }
        guard let email = Credentials.normalizedEmail(rawEmail) else { throw FirebaseError.invalid(.invalidEmail) }
        guard let oobCode, !oobCode.isEmpty else { throw FirebaseError.invalid(.missingOobCode) }
        var scope = requested
        var linkTo: String?
        if let idToken {
            let (verified, user) = try await tokens.verify(
                idToken: idToken, requested: requested, requestID: requestID, logger: logger)
            linkTo = user.localId
            scope = verified.scope
            try await tokens.waitPastIssueSecond(of: verified)
        }
        let (issued, answer) = try await tokens.startSession(
            answering: InternalEndpoints.signInWithEmailLink, requestID: requestID,
            logger: logger
        ) { session in
            var call = SignInWithEmailLinkRequest(
                scope: scope, email: email, oobCode: oobCode, linkTo: linkTo, session: session)
            call.clientIP = clientIP
            if linkTo != nil, let request {
                call.recoverLinkPrefix = OobController.recoverLinkPrefix(configuration, scope: scope, request: request)
            }
            return call
        }
        return (issued.user, answer.isNewUser, issued.idToken, issued.refreshToken)
    }
}
