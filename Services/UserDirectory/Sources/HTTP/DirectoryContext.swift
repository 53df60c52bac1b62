import Hummingbird
import TesseraShared

/// Who is calling the admin API: the bootstrap secret (`TESSERA_ADMIN_TOKEN`) or a stored
/// credential, project-wide or for one tenant.
public struct AdminPrincipal: Sendable, Equatable {
    public var credentialId: String
    /// The project (a project admin) or the one tenant it administers.
    public var owner: Owner

    public static let bootstrap = AdminPrincipal(credentialId: "bootstrap", owner: .project)
}

/// The directory's request context: the request id, and the admin once the admin middleware has
/// authenticated one.
public struct DirectoryContext: InternalCallerContext {
    public var coreContext: CoreRequestContextStorage
    public var requestID: String
    public var isInternalCaller = false
    public var admin: AdminPrincipal?
    /// The scope the admin's request path names, resolved with the admin.
    public var adminScope: AdminScope?
    /// A console request's session CSRF token (the console's forms carry it).
    public var consoleCSRF: String?
    /// The peer's address (the ingress, behind one); see `ClientAddress` for the caller's.
    public var remoteAddress: String?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.requestID = ""
        self.admin = nil
        self.remoteAddress = source.channel.remoteAddress?.ipAddress
    }
}

/// The context of the internal API's handlers: the token service and the worker, verified.
typealias DirectoryInternalContext = InternalContext<DirectoryContext>

/// The context of every admin-plane handler: built once per request, after `AdminAuthMiddleware`
/// (or the console's session middleware) authenticated the caller and resolved the path's scope, so
/// neither is optional here.
public struct AdminContext: ChildRequestContext, TesseraContext {
    public var coreContext: CoreRequestContextStorage
    public var requestID: String
    public let principal: AdminPrincipal
    /// The path's scope, resolved.
    public let pathScope: AdminScope
    public var remoteAddress: String?
    /// On console pages: the session's CSRF token, for the forms the page shows.
    public let consoleCSRF: String?

    public init(context: DirectoryContext) throws {
        guard let principal = context.admin, let pathScope = context.adminScope else {
            throw FirebaseError.missingCredentials
        }
        self.coreContext = context.coreContext
        self.requestID = context.requestID
        self.principal = principal
        self.pathScope = pathScope
        self.remoteAddress = context.remoteAddress
        self.consoleCSRF = context.consoleCSRF
    }

    /// The one scope a tenant-scoped credential may act in; nil for a project admin.
    public var confinedTo: Scope? { principal.owner.tenant }

    /// The scope the call acts in: its path's, `TENANT_NOT_FOUND` if that tenant does not exist (the
    /// calls on users, whose body may name a tenant on a project path, use
    /// `TenantStore.usersScope(of:bodyTenant:)`).
    public var scope: Scope { get throws { try pathScope.scope } }

    /// Who owns what the call creates or lists (admin credentials, service accounts): the project on
    /// project paths, else the path's tenant.
    var owner: Owner { get throws { Owner(of: try scope) } }
}
