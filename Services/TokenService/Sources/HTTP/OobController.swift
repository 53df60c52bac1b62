import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

/// Out-of-band flows (docs/protocol/accounts.md#end-user-endpoints): `sendOobCode` (verification, reset,
/// email change and email-link sign-in codes), `resetPassword`; `accounts:update{oobCode}` comes through
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
            return try await sendPrivileged(request, context: context, authorization: authorization)
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
            case .recoverEmail:
                // `OobRequestType.parse` refuses it: only an email change sends one.
                throw FirebaseError.invalidArgument("Invalid value at 'request_type': RECOVER_EMAIL")
            case .verifyEmail, .verifyAndChangeEmail:
                if type == .verifyAndChangeEmail {
                    guard let raw = body.newEmail, !raw.isEmpty else { throw FirebaseError.invalid(.missingNewEmail) }
                    guard let normalized = Credentials.normalizedEmail(raw) else {
                        throw FirebaseError.invalid(.invalidEmail)
                    }
                    newEmail = normalized
                }
                // A verification names its user by ID token only: without one the answer is
                // INVALID_ID_TOKEN, an email change's MISSING_ID_TOKEN (the emulator's oob.spec).
                if type == .verifyEmail, body.idToken?.isEmpty ?? true { throw FirebaseError.invalid(.invalidIdToken) }
                let (verified, user) = try await tokens.verify(
                    idToken: body.idToken, requested: scope, requestID: context.requestID, logger: context.logger)
                // Changing the sign-in email is sensitive (docs/protocol/accounts.md#accounts-and-providers).
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
                InternalEndpoints.sendOobCode, send, requestID: context.requestID,
                logger: context.logger)
            return try JSONResponse(SendResponse(email: answer.email ?? email)).response(
                from: request, context: context)
        }
    }

    /// An admin's `sendOobCode` goes to the directory's admin API, which authenticates it. One that
    /// names its user by `idToken` (the emulator's oob.spec, "by idToken for OAuth 2 requests") has
    /// the token verified here, as every ID token is, and the directory is told the user's id instead.
    func sendPrivileged(_ request: Request, context: ClientOrAdminContext, authorization: String) async throws
        -> Response
    {
        var request = request
        let buffer = try await request.collectBody(upTo: 1 << 20)
        let data = Data(buffer.readableBytesView)
        guard let object = try? JSONDecoder().decode(JSONValue.self, from: data).objectValue,
            case .string(let idToken)? = object["idToken"], !idToken.isEmpty
        else {
            let tenant =
                (try? JSONBody.decode(
                    AccountsController.IDTokenRequest.self, from: data.isEmpty ? Data("{}".utf8) : data))?.tenantId
            return try await tokens.relayAdminCall(
                project: configuration.projectID, scope: Scope(wire: tenant), verb: "sendOobCode",
                authorization: authorization, body: data, request: request, context: context)
        }
        let requested = Scope(wire: object["tenantId"]?.stringValue)
        let (verified, user) = try await tokens.verify(
            idToken: idToken, requested: requested, requestID: context.requestID, logger: context.logger)
        var forwarded = object
        forwarded["idToken"] = nil
        forwarded["email"] = nil
        forwarded["localId"] = .string(user.localId)
        forwarded["tenantId"] = verified.scope.tenantID.map(JSONValue.string)
        return try await tokens.relayAdminCall(
            project: configuration.projectID, scope: verified.scope, verb: "sendOobCode", authorization: authorization,
            body: try JSONEncoder().encode(JSONValue.object(forwarded)), request: request, context: context)
    }

    /// The action link of the notice an email change mails to the old address (RECOVER_EMAIL), built
    /// as every link is; nil when it cannot be (then the directory refuses a change that needs one).
    static func recoverLinkPrefix(_ configuration: TokenServiceConfiguration, scope: Scope, request: Request)
        -> String?
    {
        try? configuration.links.prefix(
            mode: OobRequestType.recoverEmail.mode, tenant: scope.tenantID, request: request,
            lang: ActionPageStrings.choose(
                lang: request.headers[HTTPField.Name("X-Firebase-Locale")!], acceptLanguage: nil
            ).code)
    }

    struct ResetRequest: Decodable {
        var oobCode: String?
        var newPassword: String?
        var tenantId: String?
    }

    struct ResetResponse: Encodable, Sendable {
        var kind = "identitytoolkit#ResetPasswordResponse"
        /// Not for an email-link code: whoever completes it must know the address (the emulator's
        /// oob.spec, "purpose of oobCodes").
        var email: String?
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
                InternalEndpoints.resetPassword,
                ResetPasswordRequest(
                    scope: Scope(wire: body.tenantId), oobCode: code, newPassword: body.newPassword),
                requestID: context.requestID, logger: context.logger)
            // An email-link code's inspection names its address, which the emulator leaves out: the
            // Apple SDK's checkActionCode stops the app without it (docs/design-notes.md, "Where
            // Tessera differs from the Firebase emulator").
            return JSONResponse(
                ResetResponse(
                    email: answer.email, newEmail: answer.newEmail, requestType: answer.requestType.rawValue))
        }
    }
}
