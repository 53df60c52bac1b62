import Foundation
import Hummingbird
import Logging
import PostgresNIO
import TesseraShared

/// Admin credentials and the audit log in PostgreSQL.
public struct AdminCredentialStore: Sendable {
    let client: Database
    let bootstrapSecret: String
    /// Where the Admin SDKs' emulator-mode token (`Bearer owner`) acts, when the operator turned it on
    /// (`TESSERA_OWNER_TOKEN_SCOPE`); nil: refused like any unknown credential
    /// (docs/protocol/admin.md#the-admin-plane).
    var ownerScope: Owner? = nil

    public struct Credential: Sendable {
        var credentialId: String
        var owner: Owner
        var displayName: String
        var createTime: Date
    }

    /// The principal for a presented secret, or nil. The bootstrap secret is compared in constant
    /// time; stored credentials are found by the SHA-256 of the (256-bit random) secret.
    func authenticate(_ secret: String, logger: Logger) async throws -> AdminPrincipal? {
        if Secrets.constantTimeEquals(secret, bootstrapSecret) { return .bootstrap }
        // The emulator accepts `owner` in any case; only where the operator allowed it, and audited as such.
        if let ownerScope, secret.lowercased() == "owner" {
            return AdminPrincipal(credentialId: "owner", owner: ownerScope)
        }
        let rows = try await client.query(
            """
            SELECT credential_id, tenant_id FROM admin_credentials
            WHERE secret_hash = \(Secrets.tokenHash(secret)) AND revoked_at IS NULL
            """, logger: logger)
        for try await (id, tenant) in rows.decode((String, String?).self) {
            return AdminPrincipal(credentialId: id, owner: Owner(column: tenant))
        }
        return nil
    }

    func create(owner: Owner, displayName: String, logger: Logger) async throws -> (Credential, String) {
        let id = "cred-" + Secrets.randomAlphanumeric(16).lowercased()
        let secret = "tsa_" + Base64URL.encode(Secrets.randomBytes(32))
        let rows = try await client.query(
            """
            INSERT INTO admin_credentials (credential_id, tenant_id, display_name, secret_hash)
            VALUES (\(id), \(owner: owner), \(displayName), \(Secrets.tokenHash(secret))) RETURNING created_at
            """, logger: logger)
        var created = Date()
        for try await time in rows.decode(Date.self) { created = time }
        return (Credential(credentialId: id, owner: owner, displayName: displayName, createTime: created), secret)
    }

    /// A page of live credentials in id order, after `after` (the previous page's last id).
    func list(owner: Owner, after: String?, limit: Int, logger: Logger) async throws -> [Credential] {
        let rows = try await client.query(
            """
            SELECT credential_id, tenant_id, display_name, created_at FROM admin_credentials
            WHERE tenant_id IS NOT DISTINCT FROM \(owner: owner) AND revoked_at IS NULL AND credential_id > \(after ?? "")
            ORDER BY credential_id LIMIT \(limit)
            """, logger: logger)
        var result: [Credential] = []
        for try await (id, tenant, name, created) in rows.decode((String, String?, String, Date).self) {
            result.append(
                Credential(credentialId: id, owner: Owner(column: tenant), displayName: name, createTime: created))
        }
        return result
    }

    func revoke(id: String, owner: Owner, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            UPDATE admin_credentials SET revoked_at = now()
            WHERE credential_id = \(id) AND tenant_id IS NOT DISTINCT FROM \(owner: owner) AND revoked_at IS NULL
            RETURNING credential_id
            """, logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
    }

    func audit(scope: Scope, actor: String, action: String, target: String, requestID: String, logger: Logger)
        async throws
    {
        try await client.query(
            """
            INSERT INTO audit_log (tenant_id, actor, action, target, request_id)
            VALUES (\(scope: scope), \(actor), \(action), \(target), \(requestID))
            """, logger: logger)
    }

    struct AuditEntry: Encodable, Sendable {
        var time: String
        var actor: String
        var action: String
        var target: String
        var tenantId: String?
        var requestId: String
    }

    /// Newest first; `before` is the id the previous page ended at.
    func auditEntries(scope: Scope, before: Int64?, limit: Int, logger: Logger) async throws
        -> [(Int64, AuditEntry)]
    {
        let rows = try await client.query(
            """
            SELECT id, time, actor, action, target, request_id FROM audit_log
            WHERE tenant_id = \(scope: scope) AND id < \(before ?? Int64.max) ORDER BY id DESC LIMIT \(limit)
            """, logger: logger)
        var result: [(Int64, AuditEntry)] = []
        for try await (id, time, actor, action, target, requestID) in rows.decode(
            (Int64, Date, String, String, String, String).self)
        {
            result.append(
                (
                    id,
                    AuditEntry(
                        time: RFC3339.seconds(time), actor: actor, action: action, target: target,
                        tenantId: scope.tenantID, requestId: requestID)
                ))
        }
        return result
    }
}

/// `…/adminCredentials` and `…/auditLog` (docs/protocol/admin.md#tesseras-own-admin-resources).
struct AdminCredentialController {
    let store: AdminCredentialStore
    let projectID: String

    func addRoutes(to group: RouterGroup<AdminContext>) {
        for scope in ["v2/projects/{project}", "v2/projects/{project}/tenants/{tenant}"] {
            group.post("\(scope)/adminCredentials", use: create)
            group.get("\(scope)/adminCredentials", use: list)
            group.delete("\(scope)/adminCredentials/{credential}", use: revoke)
            group.get("\(scope)/auditLog", use: auditLog)
        }
    }

    struct CredentialWire: Codable, Sendable {
        var name: String
        var credentialId: String
        var tenantId: String?
        var displayName: String
        var createTime: String
        var secret: String?
    }

    func wire(_ credential: AdminCredentialStore.Credential, secret: String? = nil) -> CredentialWire {
        let scope = credential.owner.tenant.map { "projects/\(projectID)/tenants/\($0.key)" } ?? "projects/\(projectID)"
        return CredentialWire(
            name: "\(scope)/adminCredentials/\(credential.credentialId)", credentialId: credential.credentialId,
            tenantId: credential.owner.tenantID, displayName: credential.displayName,
            createTime: RFC3339.seconds(credential.createTime), secret: secret)
    }

    struct CreateRequest: Decodable {
        var displayName: String?
    }

    @Sendable func create(_ request: Request, context: AdminContext) async throws -> JSONResponse<CredentialWire> {
        let body = try await request.decodeJSON(CreateRequest.self, context: context)
        let (credential, secret) = try await store.create(
            owner: context.owner, displayName: body.displayName ?? "", logger: context.logger
        )
        context.logger.info("admin credential created", metadata: ["credential.id": .string(credential.credentialId)])
        return JSONResponse(wire(credential, secret: secret))
    }

    struct ListResponse: Encodable, Sendable {
        var adminCredentials: [CredentialWire]
        var nextPageToken: String?
    }

    /// `pageSize` (1–1000, default 100) and `pageToken` (the last id of the previous page),
    /// docs/protocol/admin.md#tesseras-own-admin-resources.
    @Sendable func list(_ request: Request, context: AdminContext) async throws -> JSONResponse<ListResponse> {
        let owner = try context.owner
        let page = try await Page.fetch(request) { after, limit in
            try await store.list(owner: owner, after: after, limit: limit, logger: context.logger)
        }
        return JSONResponse(
            ListResponse(adminCredentials: page.rows.map { wire($0) }, nextPageToken: page.nextToken(\.credentialId)))
    }

    @Sendable func revoke(_ request: Request, context: AdminContext) async throws -> JSONResponse<EmptyObject> {
        let id = try context.parameters.require("credential")
        guard try await store.revoke(id: id, owner: context.owner, logger: context.logger)
        else {
            throw FirebaseError.invalid(.credentialNotFound)
        }
        context.logger.info("admin credential revoked", metadata: ["credential.id": .string(id)])
        return JSONResponse(EmptyObject())
    }

    struct AuditPage: Encodable, Sendable {
        var entries: [AdminCredentialStore.AuditEntry]
        var nextPageToken: String?
    }

    @Sendable func auditLog(_ request: Request, context: AdminContext) async throws -> JSONResponse<AuditPage> {
        let scope = try context.scope
        let page = try await Page.fetch(request) { after, limit in
            try await store.auditEntries(
                scope: scope, before: after.flatMap { Int64($0) }, limit: limit, logger: context.logger)
        }
        return JSONResponse(AuditPage(entries: page.rows.map(\.1), nextPageToken: page.nextToken { String($0.0) }))
    }
}
