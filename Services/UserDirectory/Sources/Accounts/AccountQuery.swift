import Logging
import PostgresNIO
import TesseraShared

/// A search over one scope's users (`accounts:query`, and the console's users table): the users any
/// filter matches (all of them without filters), counted, ordered and paged.
struct AccountQuery: Sendable {
    /// What a user is ordered by. The cases name columns; nothing else reaches the SQL text.
    enum SortKey: String, CaseIterable, Sendable {
        case userID = "USER_ID"
        case name = "NAME"
        case createdAt = "CREATED_AT"
        case lastLoginAt = "LAST_LOGIN_AT"
        case email = "USER_EMAIL"

        var column: String {
            switch self {
            case .userID: "local_id"
            case .name: "display_name"
            case .createdAt: "created_at"
            case .lastLoginAt: "last_login_at"
            case .email: "email"
            }
        }
    }

    /// True: only the users matching one of the filters below (OR), none when they are all empty.
    /// False: every user of the scope.
    var isFiltered = false
    var emails: [String] = []
    var localIDs: [String] = []
    var phoneNumbers: [String] = []
    var anonymous = false
    /// With `isFiltered`: also the users whose email starts with this (the console's search).
    var emailPrefix: String?
    /// Conditions that must all hold besides (the console's filters); unset ones do not narrow.
    var onlyAnonymous = false
    var onlyDisabled = false
    var onlyUnverified = false
    /// A linked provider id; `password` means a password is set.
    var provider: String?
    var sortBy = SortKey.userID
    var descending = false
    var limit = 500
    var offset = 0
    /// False: count only.
    var returnUsers = true
}

extension AdminUsers {
    /// Runs `query` in `scope`: how many users match, and the requested page of them.
    func search(_ query: AccountQuery, scope: Scope, logger: Logger) async throws -> (count: Int, users: [UserRecord]) {
        try await client.withConnection { connection in
            // Column and direction come from `SortKey` and a Bool; every value is a bind parameter.
            let filter: PostgresQuery = """
                tenant_id = \(scope: scope) AND (NOT \(query.isFiltered) OR email = ANY(\(query.emails))
                    OR local_id = ANY(\(query.localIDs)) OR phone_number = ANY(\(query.phoneNumbers))
                    OR (\(query.anonymous) AND is_anonymous)
                    OR email LIKE \(query.emailPrefix.map(AccountRows.likePrefix)) ESCAPE '\\')
                AND (NOT \(query.onlyAnonymous) OR is_anonymous) AND (NOT \(query.onlyDisabled) OR disabled)
                AND (NOT \(query.onlyUnverified) OR NOT email_verified)
                AND (\(query.provider)::text IS NULL
                    OR (\(query.provider) = 'password' AND password_hash IS NOT NULL)
                    OR EXISTS (SELECT 1 FROM provider_links l WHERE l.tenant_id = users.tenant_id
                        AND l.local_id = users.local_id AND l.provider_id = \(query.provider)))
                """
            var countQuery = PostgresQuery(unsafeSQL: "SELECT count(*) FROM users WHERE " + filter.sql)
            countQuery.binds = filter.binds
            var count = 0
            for try await n in try await connection.query(countQuery, logger: logger).decode(Int.self) {
                count = n
            }
            guard query.returnUsers else { return (count, []) }
            let order = query.descending ? "DESC" : "ASC"
            var pageQuery = PostgresQuery(
                unsafeSQL: "SELECT local_id FROM users WHERE " + filter.sql
                    + " ORDER BY \(query.sortBy.column) \(order) NULLS LAST, local_id \(order)"
                    + " LIMIT \(query.limit) OFFSET \(query.offset)")
            pageQuery.binds = filter.binds
            var ordered: [String] = []
            for try await id in try await connection.query(pageQuery, logger: logger).decode(String.self) {
                ordered.append(id)
            }
            let users = try await MultiFactorAccounts.usersWithFactors(
                connection, scope: scope, localIds: ordered, logger: logger)
            return (count, users)
        }
    }
}

extension AccountRows {
    /// A LIKE pattern for the strings that start with `prefix` (its `%`, `_` and `\` taken literally).
    static func likePrefix(_ prefix: String) -> String {
        var pattern = ""
        for character in prefix {
            if character == "%" || character == "_" || character == "\\" { pattern.append("\\") }
            pattern.append(character)
        }
        return pattern + "%"
    }
}
