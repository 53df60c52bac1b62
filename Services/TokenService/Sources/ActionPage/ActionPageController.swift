import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

/// The hosted action page, `/__/auth/action` (docs/protocol/sdks.md#what-the-sdks-depend-on): where every
/// mailed link points unless the deployment sets `TESSERA_ACTION_URL`. Server-rendered, no JavaScript, no
/// third-party assets. A GET never uses the code: it checks it and shows a form (a mail scanner that follows
/// links changes nothing); the form's POST, with a CSRF token bound to a cookie, completes the action through
/// the same operations as the public API (`accounts:update{oobCode}`, `accounts:resetPassword`,
/// `accounts:signInWithEmailLink`).
struct ActionPageController {
    let tokens: SessionTokens
    let configuration: TokenServiceConfiguration

    static let path = "/__/auth/action"
    static let stylesheetPath = "/__/auth/action.css"
    static let csrfCookie = HostCookie(name: "tessera_action_csrf", plainPath: path)

    func addRoutes(to router: Router<TokenContext>) {
        router.get(RouterPath(Self.path), use: show)
        // Mail scanners and `curl -I` ask with HEAD: the same headers, nothing used up.
        router.head(RouterPath(Self.path), use: show)
        router.post(RouterPath(Self.path), use: submit)
        router.get(RouterPath(Self.stylesheetPath)) { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "public, max-age=3600"],
                body: .init(byteBuffer: ByteBuffer(string: ActionPageHTML.stylesheet)))
        }
    }

    enum Mode: String, CaseIterable {
        case verifyEmail, resetPassword, recoverEmail, verifyAndChangeEmail, signIn

        /// The code type a link of this mode carries.
        var requestType: OobRequestType? {
            switch self {
            case .verifyEmail: .verifyEmail
            case .resetPassword: .passwordReset
            case .verifyAndChangeEmail: .verifyAndChangeEmail
            case .signIn: .emailSignIn
            case .recoverEmail: .recoverEmail
            }
        }
    }

    /// The link's parameters, from the query (GET) or the form (POST).
    struct Link {
        var mode: Mode?
        var rawMode: String?
        var oobCode: String?
        var apiKey: String?
        var tenantId: String?
        var continueUrl: String?
        var lang: String?

        init(_ fields: [String: String]) {
            rawMode = fields["mode"]
            mode = rawMode.flatMap(Mode.init(rawValue:))
            oobCode = fields["oobCode"].flatMap { $0.isEmpty ? nil : $0 }
            apiKey = fields["apiKey"]
            tenantId = fields["tenantId"].flatMap { $0.isEmpty ? nil : $0 }
            continueUrl = fields["continueUrl"].flatMap { $0.isEmpty ? nil : $0 }
            lang = fields["lang"]
        }

        var scope: Scope { Scope(wire: tenantId) }
    }

    @Sendable func show(_ request: Request, context: TokenContext) async throws -> Response {
        var fields: [String: String] = [:]
        for (name, value) in request.uri.queryParameters { fields[String(name)] = String(value) }
        let link = Link(fields)
        let page = ActionPageHTML(
            link: link,
            language: ActionPageStrings.choose(lang: link.lang, acceptLanguage: request.headers[.acceptLanguage]),
            continueURL: await continueURL(link, context: context))
        do {
            let (mode, code) = try await check(link, context: context)
            let csrf = Base64URL.encode(Secrets.randomBytes(24))
            var response = page.form(mode: mode, code: code, csrf: csrf)
            response.setCookie(Self.csrfCookie.cookie(csrf, maxAge: nil, for: request))
            return response
        } catch {
            return page.error(HostedPage.firebaseError(error, page: "action", logger: context.logger))
        }
    }

    @Sendable func submit(_ request: Request, context: TokenContext) async throws -> Response {
        var request = request
        let fields: [String: String]
        do {
            let buffer = try await request.collectBody(upTo: 64 << 10)
            fields = FormURLEncoded.parse(String(buffer: buffer)) ?? [:]
        } catch {
            fields = [:]
        }
        let link = Link(fields)
        let page = ActionPageHTML(
            link: link,
            language: ActionPageStrings.choose(lang: link.lang, acceptLanguage: request.headers[.acceptLanguage]),
            continueURL: await continueURL(link, context: context))
        // The form's token must match the cookie the form came with: another site cannot read the
        // cookie, so it cannot post a form of its own (a sign-in into its account, say) here.
        guard let posted = fields["csrf"], let cookie = Self.csrfCookie.value(in: request),
            !posted.isEmpty, Secrets.constantTimeEquals(posted, cookie)
        else {
            return page.refused()
        }
        do {
            let (mode, code) = try await check(link, context: context)
            let email = try await complete(
                mode, code: code, link: link, fields: fields, request: request, context: context)
            return page.success(mode: mode, email: email)
        } catch {
            return page.error(HostedPage.firebaseError(error, page: "action", logger: context.logger))
        }
    }

    /// The link's `continueUrl` when it is on one of the project's authorized domains.
    func continueURL(_ link: Link, context: TokenContext) async -> String? {
        guard link.continueUrl != nil,
            let links = try? await tokens.currentLinks(requestID: context.requestID, logger: context.logger)
        else { return nil }
        return try? links.checkContinueURL(link.continueUrl)
    }

    /// The link is for this deployment and its code is one of its mode, unused and unexpired; the
    /// code stays unused (`accounts:resetPassword` without a new password only reads it).
    func check(_ link: Link, context: TokenContext) async throws -> (Mode, OobCodeResponse) {
        guard let rawMode = link.rawMode, !rawMode.isEmpty, let mode = link.mode else {
            throw FirebaseError.invalid(.invalidMode)
        }
        guard let apiKey = link.apiKey, Secrets.constantTimeEquals(apiKey, configuration.apiKey) else {
            throw FirebaseError.invalid(.invalidApiKey)
        }
        guard let oobCode = link.oobCode else { throw FirebaseError.invalid(.invalidOobCode) }
        let code = try await tokens.directory.call(
            InternalEndpoints.resetPassword,
            ResetPasswordRequest(scope: link.scope, oobCode: oobCode, newPassword: nil),
            requestID: context.requestID, logger: context.logger)
        guard let type = mode.requestType, code.requestType == type else {
            throw FirebaseError.invalid(.invalidOobCode)
        }
        return (mode, code)
    }

    /// Completes the action; returns the address to name on the success page.
    func complete(
        _ mode: Mode, code: OobCodeResponse, link: Link, fields: [String: String], request: Request,
        context: TokenContext
    ) async throws -> String {
        guard let oobCode = link.oobCode else { throw FirebaseError.invalid(.invalidOobCode) }
        switch mode {
        case .verifyEmail, .verifyAndChangeEmail, .recoverEmail:
            // A new address's confirmation mails a notice to the old one, whose link is built here.
            let answer = try await tokens.directory.call(
                InternalEndpoints.applyOobCode,
                ApplyOobCodeRequest(
                    scope: link.scope, oobCode: oobCode,
                    recoverLinkPrefix: mode == .verifyAndChangeEmail
                        ? OobController.recoverLinkPrefix(configuration, scope: link.scope, request: request) : nil),
                requestID: context.requestID, logger: context.logger)
            // The address the account has now: a new one, or the restored one.
            return answer.newEmail ?? answer.email
        case .resetPassword:
            let password = fields["newPassword"] ?? ""
            try Credentials.checkPassword(password)
            let answer = try await tokens.directory.call(
                InternalEndpoints.resetPassword,
                ResetPasswordRequest(scope: link.scope, oobCode: oobCode, newPassword: password),
                requestID: context.requestID, logger: context.logger)
            return answer.email
        case .signIn:
            do {
                let completed = try await EmailLinkController(tokens: tokens, configuration: configuration).complete(
                    email: fields["email"], oobCode: oobCode, idToken: nil, scope: link.scope,
                    clientIP: tokens.clientIP(request, context), requestID: context.requestID, logger: context.logger)
                return completed.user.email ?? code.email
            } catch let pending as SecondFactorRequired {
                // The address is proven; the page shows no tokens either way, and a user with
                // second factors signs in to an app with the factor there.
                return pending.user.email ?? code.email
            }
        }
    }
}
