import Foundation
import Hummingbird
import Logging
import TesseraShared

/// `POST …/accounts:query` (also `…:queryAccounts`, docs/protocol/admin.md#admin-endpoints): count, sort,
/// page and filter users. Filters (`expression`, OR-ed): `email`, `userId`, `phoneNumber`, and Tessera's
/// `anonymous: true`.
struct QueryController<Tenants: TenantStore> {
    let accounts: Accounts
    let tenants: Tenants

    func addRoutes(to group: RouterGroup<AdminContext>) {
        for scope in ["v1/projects/{project}", "v1/projects/{project}/tenants/{tenant}"] {
            group.post("\(scope)/accounts:query", use: query)
        }
        group.post("v1/projects/{project}:queryAccounts", use: query)
    }

    struct Expression: Decodable {
        var email: String?
        var userId: String?
        var phoneNumber: String?
        var anonymous: Bool?
    }

    struct QueryRequest: Decodable {
        var returnUserInfo: Bool?
        var limit: JSONValue?
        var offset: JSONValue?
        var sortBy: String?
        var order: String?
        var expression: [Expression]?
        var tenantId: String?
    }

    struct QueryResponse: Encodable, Sendable {
        var recordsCount: String
        var userInfo: [UserInfoWire]?
    }

    @Sendable func query(_ request: Request, context: AdminContext) async throws -> JSONResponse<QueryResponse> {
        let body = try await request.decodeJSON(QueryRequest.self, context: context)
        let scope = try await tenants.usersScope(of: context, bodyTenant: body.tenantId)
        var query = AccountQuery()
        query.limit = Int(body.limit?.intValue ?? 500)
        query.offset = Int(body.offset?.intValue ?? 0)
        guard (1...500).contains(query.limit), query.offset >= 0 else {
            throw FirebaseError.invalidArgument("INVALID_ARGUMENT : limit must be 1-500 and offset not negative")
        }
        guard let sortBy = AccountQuery.SortKey(rawValue: body.sortBy ?? "USER_ID") else {
            throw FirebaseError.invalidArgument(
                "INVALID_ARGUMENT : sortBy must be one of \(AccountQuery.SortKey.allCases.map(\.rawValue).sorted())")
        }
        query.sortBy = sortBy
        let order = (body.order ?? "ASC").uppercased()
        guard order == "ASC" || order == "DESC" else {
            throw FirebaseError.invalidArgument("INVALID_ARGUMENT : order must be ASC or DESC")
        }
        query.descending = order == "DESC"
        let expressions = body.expression ?? []
        query.isFiltered = !expressions.isEmpty
        query.emails = expressions.compactMap { $0.email?.lowercased() }
        query.localIDs = expressions.compactMap(\.userId)
        query.phoneNumbers = expressions.compactMap(\.phoneNumber)
        query.anonymous = expressions.contains { $0.anonymous == true }
        query.returnUsers = body.returnUserInfo ?? true
        let (count, page) = try await accounts.admin.search(query, scope: scope, logger: context.logger)
        return JSONResponse(
            QueryResponse(recordsCount: String(count), userInfo: query.returnUsers ? page.map(UserInfoWire.init) : nil))
    }
}
