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
            group.post("\(scope)/accounts:update", use: update)
        }
    }

    struct UpdateRequest: Decodable {
        var localId: String?
        var tenantId: String?
        var disableUser: Bool?
        var emailVerified: Bool?
        /// Admin SDKs send a JSON number of seconds; the protocol's type is an int64 string.
        var validSince: JSONValue?
        var displayName: String?
        var photoUrl: String?
        var deleteAttribute: [String]?
    }

    struct UpdateResponse: Encodable, Sendable {
        var kind = "identitytoolkit#SetAccountInfoResponse"
        var localId: String
        var email: String?
        var emailVerified: Bool
        var displayName: String?
        var photoUrl: String?
        var providerUserInfo: [ProviderUserInfo]
    }

    /// Admin `accounts:update` (B.2.3). Admin calls ignore the self-service switches and work on
    /// disabled users (B.5.13).
    @Sendable func update(_ request: Request, context: DirectoryContext) async throws -> JSONResponse<UpdateResponse> {
        let body = try await request.decodeJSON(UpdateRequest.self, context: context)
        let scope = try await resolveScope(
            pathTenant: context.parameters.get("tenant"), bodyTenant: body.tenantId, context)
        guard let localId = body.localId, !localId.isEmpty else { throw FirebaseError.invalid("MISSING_LOCAL_ID") }
        var change = AdminUserChange()
        change.disabled = body.disableUser
        change.emailVerified = body.emailVerified
        change.displayName = body.displayName
        change.photoUrl = body.photoUrl
        for attribute in body.deleteAttribute ?? [] {
            switch attribute {
            case "DISPLAY_NAME": change.deleteDisplayName = true
            case "PHOTO_URL": change.deletePhotoUrl = true
            default: throw FirebaseError.notImplemented("deleteAttribute \(attribute) in the admin API")
            }
        }
        if let validSince = body.validSince {
            switch validSince {
            case .int(let seconds): change.validSince = seconds
            case .string(let text):
                guard let seconds = Int64(text) else {
                    throw FirebaseError.invalidArgument("Invalid value at 'valid_since'")
                }
                change.validSince = seconds
            default: throw FirebaseError.invalidArgument("Invalid value at 'valid_since'")
            }
        }
        guard
            let user = try await accounts.adminUpdate(
                scope: scope, localId: localId, change: change, logger: context.logger)
        else { throw FirebaseError.invalid("USER_NOT_FOUND") }
        context.logger.info(
            "user updated by admin", metadata: ["tenant.id": .string(scope), "user.id": .string(localId)])
        return JSONResponse(
            UpdateResponse(
                localId: user.localId, email: user.email, emailVerified: user.emailVerified,
                displayName: user.displayName, photoUrl: user.photoUrl, providerUserInfo: user.providerUserInfo))
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
