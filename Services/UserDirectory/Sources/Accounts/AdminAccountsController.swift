import Foundation
import Hummingbird
import Logging
import TesseraShared

/// Admin user management under `/v1/projects/{p}[/tenants/{t}]/…` (API.md B.2.3).
struct AdminAccountsController<Accounts: AccountRepository, Tenants: TenantRepository> {
    let accounts: Accounts
    let tenants: Tenants

    func addRoutes(to group: RouterGroup<DirectoryContext>) {
        for scope in ["v1/projects/{project}", "v1/projects/{project}/tenants/{tenant}"] {
            group.post("\(scope)/accounts:lookup", use: lookup)
            group.post("\(scope)/accounts:delete", use: delete)
        }
    }

    struct LookupRequest: Decodable {
        var localId: [String]?
        var email: [String]?
        var phoneNumber: [String]?
        var tenantId: String?
    }

    struct DeleteRequest: Decodable {
        var localId: String?
        var tenantId: String?
    }

    @Sendable func lookup(_ request: Request, context: DirectoryContext) async throws -> JSONResponse<LookupResponse> {
        let body = try await request.decodeJSON(LookupRequest.self, context: context)
        let scope = try await resolveScope(
            pathTenant: context.parameters.get("tenant"), bodyTenant: body.tenantId, context)
        let users = try await accounts.lookup(
            scope: scope, localIds: body.localId ?? [], emails: body.email ?? [], logger: context.logger)
        return JSONResponse(LookupResponse(users: users))
    }

    @Sendable func delete(_ request: Request, context: DirectoryContext) async throws -> JSONResponse<DeleteResponse> {
        let body = try await request.decodeJSON(DeleteRequest.self, context: context)
        let scope = try await resolveScope(
            pathTenant: context.parameters.get("tenant"), bodyTenant: body.tenantId, context)
        guard let localId = body.localId, !localId.isEmpty else { throw FirebaseError.invalid("MISSING_LOCAL_ID") }
        guard try await accounts.delete(scope: scope, localId: localId, logger: context.logger) else {
            throw FirebaseError.invalid("USER_NOT_FOUND")
        }
        context.logger.info(
            "user deleted by admin", metadata: ["tenant.id": .string(scope), "user.id": .string(localId)])
        return JSONResponse(DeleteResponse())
    }

    /// The scope from the path (`/tenants/{t}`) or, on project paths, the body's `tenantId`; they must
    /// agree, and the tenant must exist.
    func resolveScope(pathTenant: String?, bodyTenant: String?, _ context: DirectoryContext) async throws -> String {
        if let pathTenant, let bodyTenant, !bodyTenant.isEmpty, pathTenant != bodyTenant {
            throw FirebaseError.invalid("TENANT_ID_MISMATCH")
        }
        let tenant = pathTenant ?? bodyTenant.flatMap { $0.isEmpty ? nil : $0 }
        guard let tenant else { return ScopeSettings.defaultScopeID }
        guard try await tenants.get(tenant, logger: context.logger) != nil, !tenant.isEmpty else {
            throw FirebaseError.invalid("TENANT_NOT_FOUND")
        }
        return tenant
    }
}
