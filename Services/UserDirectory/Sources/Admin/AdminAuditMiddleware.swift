import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

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
