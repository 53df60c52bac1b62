import Foundation
import Hummingbird
import Logging
import PostgresNIO
import TesseraShared

/// `POST …/accounts:query` (also `…:queryAccounts`, B.2.3): count, sort, page and filter users.
/// Filters (`expression`, OR-ed): `email`, `userId`, `phoneNumber`, and Tessera's `anonymous: true`.
struct QueryController<Tenants: TenantRepository> {
    let accounts: PostgresAccountRepository
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

    static var sortColumns: [String: String] {
        [
            "USER_ID": "local_id", "NAME": "display_name", "CREATED_AT": "created_at",
            "LAST_LOGIN_AT": "last_login_at", "USER_EMAIL": "email",
        ]
    }

    @Sendable func query(_ request: Request, context: AdminContext) async throws -> JSONResponse<QueryResponse> {
        let body = try await request.decodeJSON(QueryRequest.self, context: context)
        let scope = try await tenants.scope(of: context, bodyTenant: body.tenantId)
        let limit = body.limit?.intValue ?? 500
        let offset = body.offset?.intValue ?? 0
        guard (1...500).contains(limit), offset >= 0 else {
            throw FirebaseError.invalidArgument("INVALID_ARGUMENT : limit must be 1-500 and offset not negative")
        }
        guard let column = Self.sortColumns[body.sortBy ?? "USER_ID"] else {
            throw FirebaseError.invalidArgument(
                "INVALID_ARGUMENT : sortBy must be one of \(Self.sortColumns.keys.sorted())")
        }
        let order = (body.order ?? "ASC").uppercased()
        guard order == "ASC" || order == "DESC" else {
            throw FirebaseError.invalidArgument("INVALID_ARGUMENT : order must be ASC or DESC")
        }
        let expressions = body.expression ?? []
        let filtered = !expressions.isEmpty
        let emails = expressions.compactMap { $0.email?.lowercased() }
        let ids = expressions.compactMap(\.userId)
        let phones = expressions.compactMap(\.phoneNumber)
        let anonymous = expressions.contains { $0.anonymous == true }
        // Column and direction come from the allow-lists above; every value is a bind parameter.
        let (count, page): (Int, [UserRecord]) = try await accounts.client.withConnection { connection in
            let filter: PostgresQuery = """
                tenant_id = \(scope) AND (NOT \(filtered) OR email = ANY(\(emails)) OR local_id = ANY(\(ids))
                    OR phone_number = ANY(\(phones)) OR (\(anonymous) AND is_anonymous))
                """
            var countQuery = PostgresQuery(unsafeSQL: "SELECT count(*) FROM users WHERE ")
            countQuery.sql += filter.sql
            countQuery.binds = filter.binds
            var count = 0
            for try await n in try await connection.query(countQuery, logger: context.logger).decode(Int.self) {
                count = n
            }
            guard body.returnUserInfo ?? true else { return (count, []) }
            var pageQuery = PostgresQuery(unsafeSQL: "SELECT local_id FROM users WHERE ")
            pageQuery.sql += filter.sql
            pageQuery.sql +=
                " ORDER BY \(column) \(order) NULLS LAST, local_id \(order) LIMIT \(limit) OFFSET \(offset)"
            pageQuery.binds = filter.binds
            var ordered: [String] = []
            for try await id in try await connection.query(pageQuery, logger: context.logger).decode(String.self) {
                ordered.append(id)
            }
            let users = try await PostgresAccountRepository.fetchUsers(
                connection, scope: scope, localIds: ordered, logger: context.logger)
            return (count, users)
        }
        return JSONResponse(
            QueryResponse(
                recordsCount: String(count),
                userInfo: body.returnUserInfo ?? true ? page.map(UserInfoWire.init) : nil))
    }
}
