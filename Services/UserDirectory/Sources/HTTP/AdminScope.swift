import Hummingbird
import Logging
import TesseraShared

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

    /// The scope of an admin call on users (accounts, import and export, out-of-band links): the
    /// path's `/tenants/{t}` or, on project paths, the body's `tenantId` ("" for the project's default
    /// scope); they must agree, and the tenant must exist. A tenant whose `disableAuth` is set answers
    /// `PROJECT_DISABLED`, as Identity Platform's admins of a disabled tenant cannot manage its users
    /// (the project's scope likewise). Its settings stay reachable, so sign-in can be turned back on
    /// (docs/design-notes.md, "Admin API").
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
