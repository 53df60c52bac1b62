import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// The statements the account services share, on a connection they hold (narrow, and
/// scope-bound: each takes the `Scope` and binds it).
enum AccountRows {
    /// A user's columns, then one provider link's (null for a user without links), then the user's
    /// `initial_email` (migration 18). The user's are all null in a row that has no user (a refused
    /// rotation, a lookup of no such user); `UserRows` skips those.
    typealias UserRow = (
        String?, String?, String?, Bool?, String?, String?, Bool?, String?, Int64?, Int64?, Int64?, Int64?, Int64?,
        String?, Bool?, Bool?, String?, String?, String?, String?, String?, String?, String?, String?
    )

    /// Users of one scope by id, with their provider links, in the order asked for: one statement,
    /// a row per link (a user without links has one row whose link columns are null).
    static func fetchUsers(
        _ connection: PostgresConnection, scope: Scope, localIds: [String], logger: Logger
    ) async throws -> [UserRecord] {
        // Each id once: a repeated id would repeat its rows, and with them its links.
        var seen = Set<String>()
        let unique = localIds.filter { seen.insert($0).inserted }
        guard !unique.isEmpty else { return [] }
        let rows = try await connection.execute(UsersByID(scope: scope, localIds: unique), logger: logger)
        var users = UserRows()
        for try await row in rows { users.add(row) }
        return unique.compactMap { users.byId[$0] }
    }

    typealias RotationRow = (String, String?, UUID?, String?, String?, Int64?, String?, String?, Int64?)

    static func nowMillis() -> Int64 { RFC3339.nowMillis() }

    /// The session starts at `authTime` by the directory's clock — the clock `validSince` is written
    /// with in the same transaction, so a session started together with a credential change is never
    /// taken for an older one (the database's `now()` may lag the directory's clock across a second).
    static func createSession(
        _ connection: PostgresConnection, scope: Scope, localId: String, provider: String, authTime: Int64,
        refreshTokenHash: String, expiresAt: Int64, extraClaims: String? = nil, logger: Logger
    ) async throws -> SessionInfo {
        let familyId = UUID()
        // The family and its first token in one statement (one round trip).
        try await connection.query(
            """
            WITH new_family AS (
                INSERT INTO refresh_families (tenant_id, family_id, local_id, sign_in_provider, auth_time,
                    expires_at, extra_claims, created_at)
                VALUES (\(scope: scope), \(familyId), \(localId), \(provider), \(authTime),
                    to_timestamp(\(Double(expiresAt))), \(extraClaims), to_timestamp(\(Double(authTime))))
            )
            INSERT INTO refresh_tokens (token_hash, tenant_id, family_id, issued_at)
            VALUES (\(refreshTokenHash), \(scope: scope), \(familyId), \(authTime))
            """, logger: logger)
        return SessionInfo(newFamily: familyId, provider: provider, authTime: authTime, extraClaims: extraClaims)
    }

    /// Starts a session of `localId` and reads the user back, in the caller's transaction.
    static func startSession(
        _ connection: PostgresConnection, scope: Scope, localId: String, provider: String, nowMillis now: Int64,
        session: NewSession, logger: Logger
    ) async throws -> (UserRecord, SessionInfo) {
        let started = try await createSession(
            connection, scope: scope, localId: localId, provider: provider, authTime: now / 1000,
            refreshTokenHash: session.refreshTokenHash, expiresAt: session.expiresAt, logger: logger)
        guard let user = try await fetchUsers(connection, scope: scope, localIds: [localId], logger: logger).first
        else { throw FirebaseError.internal }
        return (user, started)
    }

    /// Deletes a user with its provider links and revokes its sessions, in the caller's transaction.
    static func deleteUser(_ connection: PostgresConnection, scope: Scope, localId: String, logger: Logger)
        async throws -> Bool
    {
        let deleted = try await connection.query(
            "DELETE FROM users WHERE tenant_id = \(scope: scope) AND local_id = \(localId) RETURNING local_id",
            logger: logger)
        var found = false
        for try await _ in deleted.decode(String.self) { found = true }
        guard found else { return false }
        try await connection.query(
            """
            UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'user_deleted'
            WHERE tenant_id = \(scope: scope) AND local_id = \(localId) AND revoked_at IS NULL
            """, logger: logger)
        return true
    }

    /// The rotation function's outcomes that are the client's error, answered as the code of the same
    /// name (migration 11's `o_outcome`).
    static let rotationErrors: Set<String> = Set(
        [ErrorCode.invalidRefreshToken, .userNotFound, .tokenExpired, .tenantNotFound, .projectDisabled, .userDisabled]
            .map(\.rawValue))
}

extension SessionInfo {
    /// A session just created: signed in at `authTime` (seconds), its first ID token issued then too.
    init(newFamily familyId: UUID, provider: String, authTime: Int64, extraClaims: String?) {
        self.init(
            familyId: familyId.uuidString.lowercased(), signInProvider: provider, authTime: authTime,
            tokenIssuedAt: authTime, extraClaims: extraClaims)
    }
}

/// User records from rows of `UsersByID.columns`: a row per provider link, the user's columns
/// repeated; a user without links has one row whose link columns are null.
struct UserRows {
    private(set) var byId: [String: UserRecord] = [:]

    mutating func add(_ row: AccountRows.UserRow) {
        // Named in the order of `UsersByID.columns`.
        let (
            scope, localId, email, emailVerified, displayName, photoUrl, disabled, customAttributes, validSince,
            createdAt, lastLoginAt, lastRefreshAt, passwordUpdatedAt, phoneNumber, customAuth, emailLinkSignin,
            linkProviderId, linkRawId, linkFederatedId, linkEmail, linkDisplayName, linkPhotoUrl, linkScreenName,
            initialEmail
        ) = row
        guard let scope, let localId, let emailVerified, let disabled, let validSince, let createdAt, let customAuth,
            let emailLinkSignin
        else { return }
        if byId[localId] == nil {
            var user = UserRecord(
                tenantId: Scope(column: scope).tenantID, localId: localId, email: email, emailVerified: emailVerified,
                displayName: displayName, photoUrl: photoUrl, disabled: disabled, customAttributes: customAttributes,
                validSince: validSince, createdAt: createdAt, lastLoginAt: lastLoginAt, lastRefreshAt: lastRefreshAt,
                passwordUpdatedAt: passwordUpdatedAt)
            user.phoneNumber = phoneNumber
            user.customAuth = customAuth ? true : nil
            user.emailLinkSignin = emailLinkSignin ? true : nil
            user.initialEmail = initialEmail
            // The password provider entry is derived, never stored: present iff an email and a password
            // or an email-link sign-in (docs/protocol/accounts.md#the-user-record).
            if let email = user.email, user.hasPassword || emailLinkSignin {
                user.providerUserInfo.append(
                    ProviderUserInfo(
                        providerId: "password", rawId: email, federatedId: email, email: email,
                        displayName: user.displayName, photoUrl: user.photoUrl))
            }
            byId[localId] = user
        }
        if let linkProviderId, let linkRawId {
            // Every entry has a federatedId (docs/protocol/sdks.md#what-the-sdks-depend-on: the Apple SDK
            // reads it as the entry's uid); an imported link may have come without one, and then it is the
            // raw id, as Firebase answers.
            byId[localId]?.providerUserInfo.append(
                ProviderUserInfo(
                    providerId: linkProviderId, rawId: linkRawId, federatedId: linkFederatedId ?? linkRawId,
                    email: linkEmail, displayName: linkDisplayName, photoUrl: linkPhotoUrl, screenName: linkScreenName))
        }
    }
}

/// The hot reads, as prepared statements: each connection parses and plans them once (planning was
/// the largest part of PostgreSQL's time per lookup and refresh; see docs/benchmarks.md).
///
/// Each requested id is one probe of the (tenant_id, local_id) index: the ids are unnested and every
/// one is looked up by a LATERAL subquery that `OFFSET 0` keeps from being flattened into a join.
/// The plain `tenant_id = $1 AND local_id = ANY($2)` was read by PostgreSQL 15 as an index scan on
/// tenant_id with local_id as a filter whenever the tenant looked small to the planner (a tenant grown
/// since its last ANALYZE, or any generic plan): a lookup then read every user of its tenant.
struct UsersByID: ScopedStatement {
    static let name = "tessera_users_by_id"
    /// The provider links `l` of the user row `u` already in the statement, a row each, or one row of
    /// nulls when it has none; the caller orders by `l.provider_id`. `OFFSET 0` keeps the subquery from
    /// being flattened, so it stays one index probe per user.
    static let linksJoin = """
        LEFT JOIN LATERAL (
            SELECT * FROM provider_links WHERE tenant_id = u.tenant_id AND local_id = u.local_id OFFSET 0) AS l ON true
        """

    /// A user `u` and one of its provider links `l` (`UserRow`).
    static let columns = """
        u.tenant_id, u.local_id, u.email, u.email_verified, u.display_name, u.photo_url, u.disabled,
            u.custom_attributes, u.valid_since, u.created_at, u.last_login_at, u.last_refresh_at,
            CASE WHEN u.password_hash IS NOT NULL THEN u.password_updated_at END, u.phone_number, u.custom_auth,
            u.email_link_signin, l.provider_id, l.raw_id, l.federated_id, l.email, l.display_name, l.photo_url, l.screen_name,
            u.initial_email
        """
    static let sql = """
        SELECT \(columns)
        FROM unnest($2::text[]) AS wanted (local_id)
        CROSS JOIN LATERAL (
            SELECT * FROM users WHERE tenant_id = $1 AND local_id = wanted.local_id OFFSET 0) AS u
        \(linksJoin)
        ORDER BY l.provider_id
        """
    typealias Row = AccountRows.UserRow
    var scope: Scope
    var localIds: [String]
    var argument: [String] { localIds }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// A prepared statement whose parameters are `$1` the scope and `$2` one value (ids, an id, an
/// email). Every prepared statement names itself: PostgresNIO's default name is
/// `String(reflecting:)` of the type, computed on every execution (1.3% of the directory's CPU under
/// refresh load).
protocol ScopedStatement: PostgresPreparedStatement {
    associatedtype Argument: PostgresDynamicTypeEncodable
    var scope: Scope { get }
    var argument: Argument { get }
}

extension ScopedStatement {
    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(scope: scope)
        bindings.append(argument)
        return bindings
    }
}

/// One user of a scope with its links, and whether the scope is disabled: no row, no such scope; user
/// columns all null, no such user. `$1` the scope, `$2` the user's id.
struct UserOfEnabledScope: ScopedStatement {
    static let name = "tessera_user_of_enabled_scope"
    static let sql = """
        SELECT t.disable_auth, u.credential_seq, \(UsersByID.columns)
        FROM tenants t
        LEFT JOIN LATERAL (
            SELECT * FROM users WHERE tenant_id = $1 AND local_id = $2 OFFSET 0) AS u ON true
        \(UsersByID.linksJoin)
        WHERE t.tenant_id = $1
        ORDER BY l.provider_id
        """
    /// The scope's `disable_auth`, the user's `credential_seq` (nil: no such user) and the user.
    typealias Row = (Bool, Int64?, AccountRows.UserRow)
    var scope: Scope
    var localId: String
    var argument: String { localId }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let r = try row.decode(
            (
                Bool, Int64?, String?, String?, String?, Bool?, String?, String?, Bool?, String?, Int64?, Int64?,
                Int64?, Int64?, Int64?, String?, Bool?, Bool?, String?, String?, String?, String?, String?, String?,
                String?, String?
            ).self)
        return (
            r.0, r.1,
            (
                r.2, r.3, r.4, r.5, r.6, r.7, r.8, r.9, r.10, r.11, r.12, r.13, r.14, r.15, r.16, r.17, r.18, r.19,
                r.20, r.21, r.22, r.23, r.24, r.25
            )
        )
    }
}

struct RotateRefreshToken: PostgresPreparedStatement {
    static let name = "tessera_rotate_refresh_token"
    /// The rotation (migration 11's function), then the user it read or wrote and its provider links
    /// (a row per link), as `UsersByID` returns them.
    static let sql = """
        SELECT r.o_outcome, r.o_scope, r.o_family, r.o_local_id, r.o_provider, r.o_auth_time, r.o_extra_claims,
            r.o_sealed, r.o_token_issued_at, \(UsersByID.columns)
        FROM tessera_rotate_refresh_token($1, $2, $3, $4, $5, $6) AS r
        CROSS JOIN LATERAL (SELECT (r.o_user).*) AS u
        \(UsersByID.linksJoin)
        ORDER BY l.provider_id
        """
    typealias Row = (AccountRows.RotationRow, AccountRows.UserRow)
    var tokenHash: String
    var newTokenHash: String
    var sealed: String
    var graceSeconds: Double
    var idleSeconds: Double
    var nowMillis: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(tokenHash)
        bindings.append(newTokenHash)
        bindings.append(sealed)
        bindings.append(graceSeconds)
        bindings.append(idleSeconds)
        bindings.append(nowMillis)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let r = try row.decode(
            (
                String, String?, UUID?, String?, String?, Int64?, String?, String?, Int64?,
                String?, String?, String?, Bool?, String?, String?, Bool?, String?, Int64?, Int64?, Int64?, Int64?,
                Int64?, String?, Bool?, Bool?, String?, String?, String?, String?, String?, String?, String?, String?
            ).self)
        return (
            (r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8),
            (
                r.9, r.10, r.11, r.12, r.13, r.14, r.15, r.16, r.17, r.18, r.19, r.20, r.21, r.22, r.23, r.24, r.25,
                r.26, r.27, r.28, r.29, r.30, r.31, r.32
            )
        )
    }
}
