import Foundation
import Hummingbird
import Logging
import TesseraShared
import _CryptoExtras

/// `…/serviceAccounts` (docs/protocol/admin.md#tesseras-own-admin-resources).
struct ServiceAccountController {
    let store: ServiceAccountStore
    let projectID: String

    func addRoutes(to group: RouterGroup<AdminContext>) {
        for scope in ["v2/projects/{project}", "v2/projects/{project}/tenants/{tenant}"] {
            group.post("\(scope)/serviceAccounts", use: create)
            group.get("\(scope)/serviceAccounts", use: list)
            group.delete("\(scope)/serviceAccounts/{account}", use: revoke)
        }
    }

    /// The Google service-account JSON (what `credentials.Certificate` reads) plus Tessera's own
    /// fields. `private_key` only in the answer that generated it.
    struct AccountWire: Encodable, Sendable {
        var type = "service_account"
        var project_id: String
        var private_key_id: String
        var private_key: String?
        var client_email: String
        var client_id: String
        /// Required by Google's client libraries; Tessera does not exchange service-account
        /// assertions for access tokens, so it names Google's endpoint as the format has it.
        var token_uri = "https://oauth2.googleapis.com/token"
        var name: String
        var accountId: String
        var displayName: String
        var tenantId: String?
    }

    struct ListedAccount: Encodable, Sendable {
        var name: String
        var accountId: String
        var displayName: String
        var clientEmail: String
        var clientId: String
        var privateKeyId: String
        var publicKeyPem: String
        var tenantId: String?
        var createTime: String
    }

    func name(_ account: ServiceAccount) -> String {
        let scope = account.owner.tenant.map { "projects/\(projectID)/tenants/\($0.key)" } ?? "projects/\(projectID)"
        return "\(scope)/serviceAccounts/\(account.accountId)"
    }

    struct CreateRequest: Decodable {
        var displayName: String?
        var publicKeyPem: String?
    }

    @Sendable func create(_ request: Request, context: AdminContext) async throws -> JSONResponse<AccountWire> {
        let body = try await request.decodeJSON(CreateRequest.self, context: context)
        return JSONResponse(
            try await create(
                owner: context.owner, displayName: body.displayName ?? "", publicKeyPem: body.publicKeyPem,
                logger: context.logger))
    }

    /// Creates an account with the given public key, or with a new key pair whose private half is in
    /// this answer only (the admin API and the console alike).
    func create(owner: Owner, displayName: String, publicKeyPem pem: String?, logger: Logger) async throws
        -> AccountWire
    {
        let publicKeyPem: String
        var privateKeyPem: String?
        if let pem {
            guard let key = try? _RSA.Signing.PublicKey(pemRepresentation: pem) else {
                throw FirebaseError.invalid(
                    .invalidConfig, "publicKeyPem must be a PEM RSA public key of at least 2048 bits.")
            }
            publicKeyPem = key.pemRepresentation
        } else {
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            privateKeyPem = key.pkcs8PEMRepresentation
            publicKeyPem = key.publicKey.pemRepresentation
        }
        let account = try await store.create(
            owner: owner, displayName: displayName, publicKeyPem: publicKeyPem, logger: logger)
        logger.info(
            "service account created",
            metadata: [
                "account.id": .string(account.accountId), "key.generated": .stringConvertible(privateKeyPem != nil),
            ])
        return AccountWire(
            project_id: projectID, private_key_id: account.privateKeyId,
            private_key: privateKeyPem.map { $0 + "\n" },
            client_email: account.clientEmail, client_id: account.clientId, name: name(account),
            accountId: account.accountId, displayName: account.displayName, tenantId: account.owner.tenantID)
    }

    struct ListResponse: Encodable, Sendable {
        var serviceAccounts: [ListedAccount]
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
            ListResponse(
                serviceAccounts: page.rows.map {
                    ListedAccount(
                        name: name($0), accountId: $0.accountId, displayName: $0.displayName,
                        clientEmail: $0.clientEmail, clientId: $0.clientId, privateKeyId: $0.privateKeyId,
                        publicKeyPem: $0.publicKeyPem, tenantId: $0.owner.tenantID,
                        createTime: RFC3339.seconds($0.createTime)
                    )
                }, nextPageToken: page.nextToken(\.accountId)))
    }

    @Sendable func revoke(_ request: Request, context: AdminContext) async throws -> JSONResponse<EmptyObject> {
        let id = try context.parameters.require("account")
        guard
            try await store.revoke(
                accountId: id, owner: context.owner, logger: context.logger)
        else {
            throw FirebaseError.configurationNotFound
        }
        context.logger.info("service account revoked", metadata: ["account.id": .string(id)])
        return JSONResponse(EmptyObject())
    }
}
