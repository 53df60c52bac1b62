import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TesseraConsole
import TesseraShared

/// The admin console (issue #25): server-rendered pages at `/console/` on the admin plane. Its
/// handlers take an `AdminContext` built from the console session, whose path scope the session
/// middleware resolved as the admin API's does, and call the same stores as the API; writes are
/// audited by `AdminAuditMiddleware`, as the API's are.
struct ConsoleController<Tenants: TenantStore> {
    let sessions: ConsoleSessionStore
    let credentials: AdminCredentialStore
    let failures: AdminAuthFailures
    let tenants: Tenants
    let accounts: Accounts
    let cleanup: CleanupStore
    let mailTemplates: MailTemplateStore
    let idpConfigs: IdpConfigStore
    let serviceAccounts: ServiceAccountController
    let links: ActionLinks
    let domains: AuthorizedDomains
    let views: ConsoleViews

    static var scopeBases: [String] { ["project", "tenants/{tenant}"] }

    func addRoutes(to router: Router<DirectoryContext>) {
        let console = router.group("console").add(middleware: ConsolePageMiddleware<DirectoryContext>(views: views))
        console.get("assets/console.css") { _, _ in Self.asset(ConsoleAssets.css, type: "text/css; charset=utf-8") }
        console.get("assets/console.js") { _, _ in
            Self.asset(ConsoleAssets.js, type: "text/javascript; charset=utf-8")
        }
        console.get("assets/icon.svg") { _, _ in Self.asset(ConsoleAssets.icon, type: "image/svg+xml") }
        console.get("sign-in", use: signInPage)
        console.post("sign-in", use: signIn)

        let signedIn = console.group().add(middleware: ConsoleSessionMiddleware(sessions: sessions, tenants: nil))
        signedIn.get("/", use: home)
        signedIn.post("sign-out", use: signOut)

        let pages = console.group()
            .add(middleware: ConsoleSessionMiddleware(sessions: sessions, tenants: tenants))
            .group(context: AdminContext.self)
            .add(middleware: AdminAuditMiddleware(credentials: credentials))
        for base in Self.scopeBases {
            pages.get("\(base)/users", use: users)
            pages.post("\(base)/users", use: createUser)
            pages.get("\(base)/transfer", use: transfer)
            pages.get("\(base)/export.json", use: export)
            pages.post("\(base)/import", use: importBatch)
            pages.get("\(base)/users/{localId}", use: user)
            for verb in UserAction.allCases {
                pages.post("\(base)/users/{localId}/\(verb.rawValue)") { request, context in
                    try await act(verb, request: request, context: context)
                }
            }
            pages.post("\(base)/users/{localId}/delete", use: deleteUser)
            pages.post("\(base)/users/{localId}/profile", use: updateProfile)
            pages.post("\(base)/users/{localId}/factors/{enrollmentId}/remove", use: removeFactor)
            pages.get("\(base)/sign-in-methods", use: methods)
            pages.post("\(base)/sign-in-methods", use: saveMethods)
            pages.post("\(base)/sms-settings", use: saveSMSSettings)
            pages.post("\(base)/authorized-domains", use: saveDomains)
            pages.get("\(base)/cleanup", use: cleanupPage)
            pages.post("\(base)/cleanup", use: saveCleanup)
            pages.get("\(base)/audit", use: audit)
            pages.get("\(base)/providers", use: providers)
            pages.post("\(base)/providers/oidc", use: createOIDC)
            pages.post("\(base)/providers/oidc/{provider}", use: saveOIDC)
            pages.post("\(base)/providers/oidc/{provider}/delete", use: deleteOIDC)
            pages.post("\(base)/providers/{provider}", use: saveBuiltIn)
            pages.get("\(base)/templates", use: templates)
            pages.post("\(base)/templates/{requestType}", use: saveTemplate)
            pages.post("\(base)/templates/{requestType}/reset", use: resetTemplate)
            pages.get("\(base)/service-accounts", use: serviceAccountList)
            pages.post("\(base)/service-accounts", use: createServiceAccount)
            pages.post("\(base)/service-accounts/{account}/revoke", use: revokeServiceAccount)
            pages.get("\(base)/credentials", use: credentialList)
            pages.post("\(base)/credentials", use: createCredential)
            pages.post("\(base)/credentials/{credential}/revoke", use: revokeCredential)
        }
        pages.get("tenants", use: tenantList)
        pages.post("tenants", use: createTenant)
        pages.post("tenants/{tenant}/delete", use: deleteTenant)
    }

    static func asset(_ text: String, type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    // MARK: Signing in and out

    @Sendable func signInPage(_ request: Request, context: DirectoryContext) async throws -> Response {
        views.render(SignInPage())
    }

    @Sendable func signIn(_ request: Request, context: DirectoryContext) async throws -> Response {
        try ConsoleSessionMiddleware.checkSameOrigin(request, requireBrowser: true)
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        let secret = form["credential"] ?? ""
        // `owner` is the Admin SDKs' emulator token, not a credential a person holds. A known
        // credential signs in even from an address that guessed wrong too often (the limit refuses
        // unknown ones only).
        let known =
            secret.isEmpty || secret.lowercased() == "owner"
            ? nil : try await credentials.authenticate(secret, logger: context.logger)
        guard let principal = known else {
            context.logger.notice("console sign-in with an unknown credential")
            do {
                try await failures.refuseUnknown(from: failures.address(request, context), logger: context.logger)
            } catch let error as FirebaseError where error.retryAfterSeconds != nil {
                return views.render(
                    SignInPage(error: "Too many failed attempts from here; try again later."), status: .tooManyRequests
                ).retrying(after: error.retryAfterSeconds)
            } catch let error as FirebaseError where error == .invalidCredentials {
                return views.render(SignInPage(error: "This credential is not valid."), status: .unauthorized)
            }
        }
        let (token, _) = try await sessions.open(principal, secret: secret, logger: context.logger)
        try await credentials.audit(
            scope: principal.owner.tenant ?? .project, actor: principal.credentialId, action: "POST /console/sign-in",
            target: "console", requestID: context.requestID, logger: context.logger)
        context.logger.info("console sign-in", metadata: ["admin.credential": .string(principal.credentialId)])
        var response = Response(status: .seeOther, headers: [.location: "/console/"])
        response.setCookie(
            ConsoleSessionMiddleware.cookie.cookie(
                token, maxAge: Int(sessions.absoluteTimeout.wholeSeconds), for: request))
        return response
    }

    @Sendable func signOut(_ request: Request, context: DirectoryContext) async throws -> Response {
        if let token = ConsoleSessionMiddleware.cookie.value(in: request) {
            try await sessions.close(token, logger: context.logger)
        }
        var response = Response(status: .seeOther, headers: [.location: "/console/sign-in"])
        response.setCookie(ConsoleSessionMiddleware.cookie.cookie("", maxAge: 0, for: request))
        return response
    }

    /// A project admin sees every scope; a tenant's admin goes straight to its tenant.
    @Sendable func home(_ request: Request, context: DirectoryContext) async throws -> Response {
        guard let principal = context.admin else { throw ConsoleRedirect.signIn }
        if let own = principal.owner.tenant {
            throw ConsoleRedirect(location: "/console/tenants/\(Self.segment(own.key))/users")
        }
        let (project, _) = try await tenants.projectConfig(logger: context.logger)
        var scopes = [
            HomePage.Row(
                name: "Project (default scope)", id: "—", link: "/console/project", state: Self.state(project))
        ]
        for tenant in try await allTenants(logger: context.logger) {
            scopes.append(
                HomePage.Row(
                    name: tenant.displayName.isEmpty ? tenant.scope.key : tenant.displayName, id: tenant.scope.key,
                    link: "/console/tenants/\(Self.segment(tenant.scope.key))", state: Self.state(tenant)))
        }
        return views.render(HomePage(chrome: chrome(principal: principal, csrf: context.consoleCSRF), scopes: scopes))
    }

    static func state(_ settings: ScopeSettings) -> String {
        if settings.disableAuth { return "Disabled" }
        var methods: [String] = []
        if settings.allowPasswordSignup { methods.append("password") }
        if settings.enableEmailLinkSignin { methods.append("email link") }
        if settings.enableAnonymousUser { methods.append("anonymous") }
        return methods.isEmpty ? "No self-service sign-up" : methods.joined(separator: ", ")
    }

    func allTenants(logger: Logger) async throws -> [ScopeSettings] {
        var result: [ScopeSettings] = []
        var after: Scope?
        repeat {
            let page = try await tenants.list(after: after, limit: 100, logger: logger)
            result += page
            after = page.count == 100 ? page.last?.scope : nil
        } while after != nil
        return result
    }

    // MARK: The page frame

    /// What the layout shows on a page about no one scope: who is signed in and the sign-out form.
    func chrome(principal: AdminPrincipal, csrf: String?) -> ConsoleChrome {
        ConsoleChrome(who: Self.who(principal), csrf: csrf ?? "")
    }

    /// What the layout shows on a scope's page: who is signed in, the sign-out form, and the scope's
    /// navigation with `section` marked.
    func chrome(_ context: AdminContext, scope: Scope, section: ConsoleSection) -> ConsoleChrome {
        ConsoleChrome(
            who: Self.who(context.principal), csrf: context.consoleCSRF ?? "",
            scopeName: scope.isProject ? "Project (default scope)" : "Tenant \(scope.key)", base: Self.base(scope),
            // Credentials are project resources: only project admins see the link (and the pages).
            projectAdmin: context.principal.owner == .project, section: section)
    }

    static func who(_ principal: AdminPrincipal) -> String {
        let name = principal.credentialId == "bootstrap" ? "bootstrap token" : principal.credentialId
        return principal.owner.tenant.map { "\(name) (tenant \($0.key))" } ?? "\(name) (project)"
    }

    static func base(_ scope: Scope) -> String {
        scope.isProject ? "/console/project" : "/console/tenants/\(segment(scope.key))"
    }

    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? text
    }

    static func query(_ items: [(String, String)]) -> String {
        var components = URLComponents()
        components.queryItems = items.map { URLQueryItem(name: $0.0, value: $0.1) }
        return components.percentEncodedQuery ?? ""
    }

    static func time(_ date: Date?) -> String {
        guard let date else { return "—" }
        return time(text: RFC3339.seconds(date))
    }

    /// An RFC 3339 time as the console shows times: to the minute, in UTC.
    static func time(text: String) -> String {
        String(text.prefix(16)).replacingOccurrences(of: "T", with: " ") + " UTC"
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }

    static func time(millis: Int64?) -> String {
        time(millis.map { Date(timeIntervalSince1970: Double($0) / 1000) })
    }

    static var notices: [String: String] {
        [
            "disabled": "The user is disabled: refreshes and sign-ins are refused.",
            "enabled": "The user is enabled again.", "verified": "The email address is marked verified.",
            "revoked": "Every session of the user is revoked.", "deleted": "The user is deleted.",
            "saved": "Saved.", "created": "The tenant is created.", "created-user": "The user is created.",
            "revoked-credential": "The credential is revoked: it no longer opens the API or the console.",
            "revoked-account": "The service account is revoked: custom tokens it signs are refused.",
            "tenant-deleted": "The tenant is deleted.",
            "reset-sent": "A password-reset mail is on its way.",
            "verification-sent": "A verification mail is on its way.",
            "factor-removed":
                "The second factor is removed, and the sessions signed in with it are ended. The user signs in without it.",
        ]
    }

    static func notice(_ request: Request) -> String? {
        request.uri.queryParameters.get("notice").flatMap { notices[$0] }
    }
}
