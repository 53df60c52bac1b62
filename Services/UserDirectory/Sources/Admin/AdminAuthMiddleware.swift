import HTTPTypes
import Hummingbird
import TesseraShared

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

extension FirebaseError {
    /// A tenant-scoped credential outside its tenant (or any credential on a project-admin resource).
    static let insufficientPermission = FirebaseError(
        status: .forbidden, message: "INSUFFICIENT_PERMISSION", grpcStatus: "PERMISSION_DENIED", reason: "forbidden")
}
