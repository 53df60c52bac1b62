import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraConsole
import TesseraShared

/// Where a console request goes instead of being answered (a page that needs a session, a form
/// that was handled).
struct ConsoleRedirect: Error {
    var location: String

    static let signIn = ConsoleRedirect(location: "/console/sign-in")
}

/// A console page that cannot be shown, in words for the admin (rendered by `ConsolePageMiddleware`).
struct ConsoleRefusal: Error {
    var status: HTTPResponse.Status
    var heading: String
    var message: String

    static let crossSite = ConsoleRefusal(
        status: .forbidden, heading: "Request refused",
        message: "This form was not sent from a page of this console. Reload the page and try again.")
    static let tooLarge = ConsoleRefusal(
        status: .contentTooLarge, heading: "Form too large",
        message: "This form is larger than the console accepts (1 MiB). Import large files with the `tessera` CLI.")
    static let staleForm = ConsoleRefusal(
        status: .forbidden, heading: "Request refused",
        message: "This form has expired or does not belong to your session. Reload the page and try again.")
}

/// The console's answers (issue #25): security headers on every one, and errors as HTML pages
/// instead of the API's JSON.
struct ConsolePageMiddleware<Context: TesseraContext>: RouterMiddleware {
    let views: ConsoleViews

    /// No script, style, frame or form target outside the console's own origin; nothing cached.
    static var headers: HTTPFields {
        [
            .contentSecurityPolicy:
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
                + "form-action 'self'; "
                + "frame-ancestors 'none'; base-uri 'none'",
            HTTPField.Name("X-Frame-Options")!: "DENY",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "same-origin",
            .cacheControl: "no-store",
        ]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let redirect as ConsoleRedirect {
            response = Response(status: .seeOther, headers: [.location: redirect.location])
        } catch let refusal as ConsoleRefusal {
            response = views.error(refusal.status, heading: refusal.heading, message: refusal.message)
        } catch let error as FirebaseError {
            // The page's script posts JSON (the import) and reads the API's JSON errors.
            if request.headers[.contentType]?.hasPrefix("application/json") == true { throw error }
            response = views.error(for: error)
        }
        for field in Self.headers { response.headers[field.name] = field.value }
        return response
    }
}

extension AdminPrincipal {
    /// What keeps a tenant-scoped credential to its tenant, for the admin API and the console alike:
    /// a route of its own tenant (`{tenant}` in the path is its id) that is not a project resource.
    func mayAct(onTenant pathTenant: String?, projectResource: Bool) -> Bool {
        guard let own = owner.tenant else { return true }
        return pathTenant.map { Scope(wire: $0) } == own && !projectResource
    }
}

/// Finds the console session of a request (the `tessera_console` cookie) and, for anything but a
/// GET, checks that the form came from the console: the browser says the request is same-origin
/// (`Sec-Fetch-Site`, else `Origin`) and the form carries the session's CSRF token. With `tenants`,
/// a tenant-scoped credential is kept to its tenant's pages exactly as the admin API keeps it.
struct ConsoleSessionMiddleware: RouterMiddleware {
    typealias Context = DirectoryContext
    static let cookie = HostCookie(name: "tessera_console", plainPath: "/console/")
    static let csrfHeader = HTTPField.Name("X-Tessera-CSRF")!

    let sessions: ConsoleSessionStore
    /// With `tenants`, a tenant-scoped credential is kept to its tenant's pages and the path's scope
    /// is resolved for the `AdminContext` behind it.
    let tenants: (any TenantStore)?

    /// Pages about every tenant, and admin credentials: for project admins only (as in the API).
    static func projectOnly(_ template: String) -> Bool {
        template == "/console/tenants" || template == "/console/tenants/{tenant}/delete"
            || template.contains("/credentials")
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let token = Self.cookie.value(in: request),
            let session = try await sessions.resume(token, logger: context.logger)
        else {
            throw ConsoleRedirect.signIn
        }
        var request = request
        if request.method != .get, request.method != .head {
            try Self.checkSameOrigin(request)
            // A form carries the token as a field; the page's script sends it as a header with JSON.
            let presented: String?
            if let header = request.headers[Self.csrfHeader] {
                presented = header
            } else {
                presented = try await Self.form(&request)["csrf"]
            }
            guard let csrf = presented, Secrets.constantTimeEquals(csrf, session.csrfToken) else {
                context.logger.notice("console form without its session's CSRF token")
                throw ConsoleRefusal.staleForm
            }
        }
        var context = context
        if let tenants {
            let template = context.endpointPath ?? request.uri.path
            guard
                session.principal.mayAct(
                    onTenant: context.parameters.get("tenant"), projectResource: Self.projectOnly(template))
            else {
                throw FirebaseError.insufficientPermission
            }
            context.adminScope = try await tenants.adminScope(
                pathTenant: context.parameters.get("tenant"), logger: context.logger)
        }
        context.admin = session.principal
        context.consoleCSRF = session.csrfToken
        return try await next(request, context)
    }

    /// The largest console form: the page's own forms are far smaller.
    static let formLimit = 1 << 20

    /// A browser says where a request comes from: `Sec-Fetch-Site` (every current browser), else
    /// `Origin`, which must be the console's own scheme, host and port. A client that sends
    /// neither is not a browser, and still needs the CSRF token.
    /// With `requireBrowser` (the sign-in form, which no session's CSRF token guards yet), a request
    /// that says nothing of where it came from is refused too: every browser that runs the console
    /// sends `Sec-Fetch-Site` or `Origin` with a form's POST.
    static func checkSameOrigin(_ request: Request, requireBrowser: Bool = false) throws {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!] {
            guard site == "same-origin" || site == "none" else { throw ConsoleRefusal.crossSite }
            return
        }
        guard let origin = request.headers[.origin] else {
            if requireBrowser { throw ConsoleRefusal.crossSite }
            return
        }
        // The Host the browser sent (the ingress keeps it) names the console's own authority.
        guard let host = request.head.authority,
            let own = WebURL.authority(ofHostHeader: host), let from = WebURL(origin),
            from.authority == own.authority
        else {
            throw ConsoleRefusal.crossSite
        }
    }

    /// The request's form fields (`application/x-www-form-urlencoded`), its body kept for the handler.
    static func form(_ request: inout Request) async throws -> [String: String] {
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: Self.formLimit)
        } catch {
            throw ConsoleRefusal.tooLarge
        }
        return FormURLEncoded.parse(String(buffer: body)) ?? [:]
    }
}
