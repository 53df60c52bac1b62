import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

/// Out-of-band flows (B.2.1): `sendOobCode` (verification, reset, email change and email-link
/// sign-in codes), `resetPassword`; `accounts:update{oobCode}` comes through
/// `AccountsController.update`, `signInWithEmailLink` through `EmailLinkController`.
struct OobController {
    let tokens: SessionTokens
    let configuration: TokenServiceConfiguration

    func addRoutes(to clients: RouterGroup<TokenContext>) {
        clients.client(.post, "v1/accounts:sendOobCode", use: sendOobCode)
        clients.client(.post, "v1/accounts:resetPassword", use: resetPassword)
    }

    struct SendRequest: Decodable {
        var requestType: JSONValue?
        var email: String?
        var newEmail: String?
        var idToken: String?
        var tenantId: String?
        var continueUrl: String?
        var returnOobLink: Bool?
    }

    struct SendResponse: Encodable, Sendable {
        var kind = "identitytoolkit#GetOobConfirmationCodeResponse"
        var email: String?
    }

    @Sendable func sendOobCode(_ request: Request, context: ClientOrAdminContext) async throws -> Response {
        if case .privileged(let authorization) = context.caller {
            return try await tokens.forwardPrivileged(
                request, context: context, authorization: authorization, verb: "sendOobCode")
        }
        let body = try await request.decodeJSON(SendRequest.self, context: context)
        return try await tokens.switchesFirst(Scope(wire: body.tenantId), context: context) {
            let type = try OobRequestType.parse(body.requestType)
            if body.returnOobLink == true { throw FirebaseError.invalid(.insufficientPermission) }
            let continueUrl = try await tokens.currentLinks(requestID: context.requestID, logger: context.logger)
                .checkContinueURL(body.continueUrl)
            var scope = Scope(wire: body.tenantId)
            var email: String?
            var newEmail: String?
            var localId: String?
            switch type {
            case .passwordReset, .emailSignIn:
                guard let raw = body.email, !raw.isEmpty else { throw FirebaseError.invalid(.missingEmail) }
                guard let normalized = Credentials.normalizedEmail(raw) else {
                    throw FirebaseError.invalid(.invalidEmail)
                }
                email = normalized
            case .verifyEmail, .verifyAndChangeEmail:
                if type == .verifyAndChangeEmail {
                    guard let raw = body.newEmail, !raw.isEmpty else { throw FirebaseError.invalid(.missingNewEmail) }
                    guard let normalized = Credentials.normalizedEmail(raw) else {
                        throw FirebaseError.invalid(.invalidEmail)
                    }
                    newEmail = normalized
                }
                let (verified, user) = try await tokens.verify(
                    idToken: body.idToken, requested: scope, requestID: context.requestID, logger: context.logger)
                // Changing the sign-in email is sensitive (A.3).
                if type == .verifyAndChangeEmail { try tokens.requireRecentSignIn(verified, user: user) }
                localId = user.localId
                scope = verified.scope
            }
            var send = SendOobCodeRequest(
                scope: scope, requestType: type, email: email, localId: localId, newEmail: newEmail,
                linkPrefix: try configuration.links.prefix(
                    mode: type.mode, tenant: scope.tenantID, request: request,
                    // The page speaks the app's language when it can (the SDKs send `X-Firebase-Locale`).
                    lang: ActionPageStrings.choose(
                        lang: request.headers[HTTPField.Name("X-Firebase-Locale")!], acceptLanguage: nil
                    ).code),
                continueUrl: continueUrl)
            send.clientIP = tokens.clientIP(request, context)
            let answer = try await tokens.directory.call(
                InternalPath.sendOobCode, send, as: SendOobCodeResponse.self, requestID: context.requestID,
                logger: context.logger)
            return try JSONResponse(SendResponse(email: answer.email ?? email)).response(
                from: request, context: context)
        }
    }

    struct ResetRequest: Decodable {
        var oobCode: String?
        var newPassword: String?
        var tenantId: String?
    }

    struct ResetResponse: Encodable, Sendable {
        var kind = "identitytoolkit#ResetPasswordResponse"
        var email: String
        var newEmail: String?
        var requestType: String
    }

    @Sendable func resetPassword(_ request: Request, context: ClientContext) async throws -> JSONResponse<ResetResponse>
    {
        let body = try await request.decodeJSON(ResetRequest.self, context: context)
        return try await tokens.switchesFirst(Scope(wire: body.tenantId), .password, context: context) {
            guard let code = body.oobCode, !code.isEmpty else { throw FirebaseError.invalid(.missingOobCode) }
            if let password = body.newPassword { try Credentials.checkPassword(password) }
            let answer = try await tokens.directory.call(
                InternalPath.resetPassword,
                ResetPasswordRequest(
                    scope: Scope(wire: body.tenantId), oobCode: code, newPassword: body.newPassword),
                as: OobCodeResponse.self, requestID: context.requestID, logger: context.logger)
            return JSONResponse(
                ResetResponse(email: answer.email, newEmail: answer.newEmail, requestType: answer.requestType.rawValue))
        }
    }
}
