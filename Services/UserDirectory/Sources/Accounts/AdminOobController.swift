import Foundation
import Hummingbird
import Logging
import TesseraShared

/// Admin `accounts:sendOobCode` (docs/protocol/admin.md#admin-endpoints): for a user named by email (or by
/// `localId`: the token service's form of an admin call that named its user by ID token), either the mail is
/// queued as for a client, or with `returnOobLink` the code and link are returned and nothing is mailed.
struct AdminOobController<Tenants: TenantStore> {
    let accounts: Accounts
    let tenants: Tenants
    let links: ActionLinks
    let domains: AuthorizedDomains

    func addRoutes(to group: RouterGroup<AdminContext>) {
        for scope in ["v1/projects/{project}", "v1/projects/{project}/tenants/{tenant}"] {
            group.post("\(scope)/accounts:sendOobCode", use: send)
        }
    }

    struct SendRequest: Decodable {
        var requestType: JSONValue?
        var email: String?
        var newEmail: String?
        var continueUrl: String?
        var returnOobLink: Bool?
        var tenantId: String?
        var localId: String?
    }

    struct SendResponse: Encodable, Sendable {
        var kind = "identitytoolkit#GetOobConfirmationCodeResponse"
        var email: String?
        var oobCode: String?
        var oobLink: String?
    }

    @Sendable func send(_ request: Request, context: AdminContext) async throws -> JSONResponse<SendResponse> {
        let body = try await request.decodeJSON(SendRequest.self, context: context)
        let scope = try await tenants.usersScope(of: context, bodyTenant: body.tenantId)
        let type = try OobRequestType.parse(body.requestType)
        var email: String?
        let localId = body.localId.flatMap { $0.isEmpty || type == .emailSignIn ? nil : $0 }
        if localId == nil {
            guard let raw = body.email, !raw.isEmpty else { throw FirebaseError.invalid(.missingEmail) }
            guard let normalized = Credentials.normalizedEmail(raw) else { throw FirebaseError.invalid(.invalidEmail) }
            email = normalized
        }
        var newEmail: String?
        if type == .verifyAndChangeEmail {
            guard let rawNew = body.newEmail, let normalized = Credentials.normalizedEmail(rawNew) else {
                throw FirebaseError.invalid(.missingNewEmail)
            }
            newEmail = normalized
        }
        // The continue URL is checked against the project's domains; the link itself is built as the
        // token service builds it (the deployment's public URL, or a Host of its own domains).
        let continueUrl = try await domains.links(links, logger: context.logger).checkContinueURL(body.continueUrl)
        let answer = try await accounts.oob.sendOobCode(
            SendOobCodeRequest(
                scope: scope, requestType: type, email: email, localId: localId, newEmail: newEmail,
                linkPrefix: try links.prefix(mode: type.mode, tenant: scope.tenantID, request: request),
                continueUrl: continueUrl, returnLink: body.returnOobLink == true), logger: context.logger)
        return JSONResponse(
            SendResponse(email: answer.email ?? email, oobCode: answer.oobCode, oobLink: answer.oobLink))
    }
}
