import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PostgresNIO
import TesseraShared

/// Who is calling the admin API: the bootstrap secret (`TESSERA_ADMIN_TOKEN`) or a stored
/// credential, project-wide or for one tenant.
public struct AdminPrincipal: Sendable, Equatable {
    public var credentialId: String
    /// The project (a project admin) or the one tenant it administers.
    public var owner: Owner

    public static let bootstrap = AdminPrincipal(credentialId: "bootstrap", owner: .project)
}

/// The scope an admin request's path names (`/tenants/{tenant}`, else the project's default scope),
/// resolved once per request by the middleware that authenticated its caller, with the tenant's
/// settings. A tenant that does not exist is `TENANT_NOT_FOUND` when the handler asks for the scope,
/// so the checks the protocol makes first (an ID token's tenant, input errors) still answer first.
public struct AdminScope: Sendable {
    let named: Scope
    /// The tenant's settings; nil for the project's default scope, whose are read when needed, and
    /// for a tenant that does not exist.
    let settings: ScopeSettings?

    /// The scope, if it exists.
    var scope: Scope {
        get throws {
            if !named.isProject, settings == nil { throw FirebaseError.invalid(.tenantNotFound) }
            return named
        }
    }
}

extension TenantStore {
    /// The path's scope (`{tenant}` in the route, nil on project paths), resolved.
    func adminScope(pathTenant: String?, logger: Logger) async throws -> AdminScope {
        guard let pathTenant else { return AdminScope(named: .project, settings: nil) }
        let named = Scope(wire: pathTenant)
        return AdminScope(named: named, settings: named.isProject ? nil : try await get(named, logger: logger))
    }
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

extension TenantStore {
    /// The scope of an admin call on users (accounts, import and export, out-of-band links): the
    /// path's `/tenants/{t}` or, on project paths, the body's `tenantId` ("" for the project's default
    /// scope); they must agree, and the tenant must exist. A tenant whose `disableAuth` is set answers
    /// `PROJECT_DISABLED`,
    /// as Identity Platform's admins of a disabled tenant cannot manage its users (the project's scope
    /// likewise). Its settings stay reachable, so sign-in can be turned back on (docs/design-notes.md,
    /// "Admin API").
    func usersScope(of context: AdminContext, bodyTenant: String? = nil) async throws -> Scope {
        let resolved = try await resolve(context, bodyTenant: bodyTenant)
        // The project's own scope has the switch too (its config's `disableAuth`).
        let scope = try resolved.scope
        var settings = resolved.settings
        if settings == nil { settings = try await get(scope, logger: context.logger) }
        if settings?.disableAuth == true { throw FirebaseError.invalid(.projectDisabled) }
        return scope
    }

    /// The path's resolved scope, unless a project path's body names a tenant: that one is resolved
    /// here (the only case that reads the tenant again).
    private func resolve(_ context: AdminContext, bodyTenant: String?) async throws -> AdminScope {
        guard let bodyTenant, !bodyTenant.isEmpty, Scope(wire: bodyTenant) != context.pathScope.named else {
            return context.pathScope
        }
        if !context.pathScope.named.isProject { throw FirebaseError.invalid(.tenantIdMismatch) }
        // A tenant-scoped credential acts in its tenant only (the auth middleware checked the path;
        // this holds for whatever the body names too).
        let named = Scope(wire: bodyTenant)
        if let confined = context.confinedTo, confined != named { throw FirebaseError.insufficientPermission }
        return try await adminScope(pathTenant: bodyTenant, logger: context.logger)
    }
}

extension FirebaseError {
    /// A tenant-scoped credential outside its tenant (or any credential on a project-admin resource).
    static let insufficientPermission = FirebaseError(
        status: .forbidden, message: "INSUFFICIENT_PERMISSION", grpcStatus: "PERMISSION_DENIED", reason: "forbidden")
}

/// Authenticates admin calls (`Authorization: Bearer <secret>`; other schemes count as absent,
/// docs/protocol/README.md#transport-conventions), keeps a tenant-scoped credential to its own tenant's users
/// and settings, and checks the path's project id. The handlers behind it get an `AdminContext` built from
/// what it found.
struct AdminAuthMiddleware: RouterMiddleware {
    typealias Context = DirectoryContext
    let credentials: AdminCredentialStore
    let projectID: String
    let failures: AdminAuthFailures
    let tenants: any TenantStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let bearer = request.bearerToken else { throw FirebaseError.missingCredentials }
        let principal = try await failures.authenticate(
            bearer, from: failures.address(request, context), credentials: credentials, logger: context.logger)
        if let project = context.parameters.get("project"), project != projectID {
            throw FirebaseError.invalid(.projectNotFound)
        }
        // A tenant's credential: its tenant's users and self-service settings, nothing else (issue #4).
        let template = context.endpointPath ?? request.uri.path
        let projectResource =
            template.contains("adminCredentials") || AdminAuditMiddleware.deletesTenant(request, template)
        guard principal.mayAct(onTenant: context.parameters.get("tenant"), projectResource: projectResource) else {
            throw FirebaseError.insufficientPermission
        }
        var context = context
        context.admin = principal
        context.adminScope = try await tenants.adminScope(
            pathTenant: context.parameters.get("tenant"), logger: context.logger)
        return try await next(request, context)
    }
}

/// Appends every successful admin write to the audit log
/// (docs/protocol/admin.md#tesseras-own-admin-resources): who (the principal), what (method and route
/// template), on what (the user, the batch, or the path) and in which scope.
struct AdminAuditMiddleware: RouterMiddleware {
    typealias Context = AdminContext
    let credentials: AdminCredentialStore

    /// The reads the protocol sends as POSTs (docs/protocol/admin.md#admin-endpoints): looking users up and
    /// querying them change nothing.
    static func isRead(_ template: String) -> Bool {
        template.hasSuffix("accounts:lookup") || template.hasSuffix("accounts:query")
            || template.hasSuffix(":queryAccounts")
    }

    static func deletesTenant(_ request: Request, _ template: String) -> Bool {
        (request.method == .delete && template.hasSuffix("{tenant}")) || template == "/console/tenants/{tenant}/delete"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let template = context.endpointPath ?? request.uri.path
        guard request.method != .get, !Self.isRead(template) else { return try await next(request, context) }
        var request = request
        let body = try await request.collectBody(upTo: 32 << 20)
        let response = try await next(request, context)
        // A console form that was handled answers 303 (to the page that shows the result).
        guard (200..<300).contains(response.status.code) || response.status == .seeOther else { return response }
        let fields = (try? JSONDecoder().decode([String: JSONValue].self, from: Data(body.readableBytesView))) ?? [:]
        let target: String
        if let id = fields["localId"]?.stringValue ?? context.parameters.get("localId") {
            target = "user:\(id)"
        } else if case .array(let ids)? = fields["localIds"] ?? fields["users"] {
            target = "users:\(ids.count)"
        } else {
            target = request.uri.path
        }
        // A tenant's deletion is the project's entry: the tenant's own log goes with the tenant.
        let pathTenant = context.parameters.get("tenant")
        let scope =
            Self.deletesTenant(request, template)
            ? .project : Scope(wire: pathTenant ?? fields["tenantId"]?.stringValue)
        do {
            try await credentials.audit(
                scope: scope, actor: context.principal.credentialId,
                action: "\(request.method.rawValue) \(template)", target: target, requestID: context.requestID,
                logger: context.logger)
        } catch {
            context.logger.error("audit log write failed", metadata: ["error": "\(String(reflecting: error))"])
        }
        return response
    }
}

/// The limit on failed admin authentication (docs/architecture.md, "The admin authentication
/// limit"): each unknown credential counts against the caller's address in the project's rate
/// counters, shared by every replica; past the limit an unknown credential from that address gets
/// `TOO_MANY_ATTEMPTS_TRY_LATER` with `Retry-After` until the hour's window ends. A known credential
/// is never refused by it, so a flood of wrong guesses cannot lock the admins out.
struct AdminAuthFailures: Sendable {
    static let bucket = "admin_auth_failure"
    let client: Database
    let clientAddress: ClientAddress
    let internalSecret: String
    let limit: Int

    /// The caller's address: on a call the token service relays (the Admin SDKs' privileged calls on
    /// client paths), the end user's as it resolved it, believed only beside the internal secret;
    /// otherwise the peer, or what trusted proxies say it is.
    func address(_ request: Request, _ context: DirectoryContext) -> String? {
        if let relayed = request.headers[.relayedClientAddress], CIDR.bytes(relayed) != nil,
            let presented = request.headers[.internalSecret],
            Secrets.constantTimeEquals(presented, internalSecret)
        {
            return relayed
        }
        return clientAddress.resolve(
            peer: context.remoteAddress, forwardedFor: request.headers[values: .xForwardedFor].joined(separator: ","))
    }

    /// The admin `secret` names, from `address`: a known credential passes whatever the address
    /// did before; an unknown one is refused, and counted unless the address is already blocked.
    func authenticate(
        _ secret: String, from address: String?, credentials: AdminCredentialStore, logger: Logger
    ) async throws -> AdminPrincipal {
        if let principal = try await credentials.authenticate(secret, logger: logger) { return principal }
        logger.notice("admin call with an unknown credential")
        try await refuseUnknown(from: address, logger: logger)
    }

    /// Answers an unknown credential: `TOO_MANY_ATTEMPTS_TRY_LATER` from a blocked address, else
    /// `INVALID_CREDENTIALS` after counting it.
    func refuseUnknown(from address: String?, logger: Logger) async throws -> Never {
        try await checkNotBlocked(address, logger: logger)
        try await count(address, logger: logger)
        throw FirebaseError.invalidCredentials
    }

    func checkNotBlocked(_ address: String?, logger: Logger) async throws {
        guard RateLimiter.applies(limit: limit, key: address), let address else { return }
        let hashed = RateLimiter.hashedKey(address)
        let rows = try await client.query(
            """
            SELECT ceil(extract(epoch FROM window_start) + \(RateLimiter.window) - extract(epoch FROM now()))::bigint
            FROM rate_counters
            WHERE tenant_id = \(scope: .project) AND bucket = \(Self.bucket) AND key = \(hashed)
                AND window_start = to_timestamp(floor(extract(epoch FROM now()) / \(RateLimiter.window)) * \(RateLimiter.window))
                AND count >= \(limit)
            """, logger: logger)
        for try await remaining in rows.decode(Int64.self) {
            throw FirebaseError.tooManyAttempts(retryAfterSeconds: Int(max(1, remaining)))
        }
    }

    func count(_ address: String?, logger: Logger) async throws {
        guard RateLimiter.applies(limit: limit, key: address), let address else { return }
        // The attempt that reaches the limit is still answered 401; the next unknown ones are refused.
        _ = try await client.withConnection { connection in
            try await RateLimiter.increment(
                connection, scope: .project, bucket: Self.bucket, key: address, logger: logger)
        }
    }
}
