import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// The statements the account services share, on a connection they hold (narrow, and
/// scope-bound: each takes the `Scope` and binds it).
enum AccountRows {
    /// A user and one of its provider links, a row of `UsersByID.columns`. The user's columns are all
    /// null in a row that has no user (a refused rotation, a lookup of no such user); `UserRows` skips
    /// those.
    struct UserRow: NamedRow {
        var scope: Scope?
        var localId: String?
        var email: String?
        var emailVerified: Bool?
        var displayName: String?
        var photoUrl: String?
        var disabled: Bool?
        var customAttributes: String?
        var validSince: Int64?
        var createdAt: Int64?
        var lastLoginAt: Int64?
        var lastRefreshAt: Int64?
        /// When the password was set; null without a password.
        var passwordUpdatedAt: Int64?
        var phoneNumber: String?
        var customAuth: Bool?
        var emailLinkSignin: Bool?
        var initialEmail: String?
        /// The row's provider link; nil for a user without links.
        var link: ProviderUserInfo?

        init(_ row: PostgresRandomAccessRow) throws {
            scope = try row.value("tenant_id")
            localId = try row.value("local_id")
            email = try row.value("email")
            emailVerified = try row.value("email_verified")
            displayName = try row.value("display_name")
            photoUrl = try row.value("photo_url")
            disabled = try row.value("disabled")
            customAttributes = try row.value("custom_attributes")
            validSince = try row.value("valid_since")
            createdAt = try row.value("created_at")
            lastLoginAt = try row.value("last_login_at")
            lastRefreshAt = try row.value("last_refresh_at")
            passwordUpdatedAt = try row.value("password_updated_at")
            phoneNumber = try row.value("phone_number")
            customAuth = try row.value("custom_auth")
            emailLinkSignin = try row.value("email_link_signin")
            initialEmail = try row.value("initial_email")
            if let providerId: String = try row.value("link_provider_id"),
                let rawId: String = try row.value("link_raw_id")
            {
                // Every entry has a federatedId (docs/protocol/sdks.md#what-the-sdks-depend-on: the Apple
                // SDK reads it as the entry's uid); an imported link may have come without one, and then
                // it is the raw id, as Firebase answers.
                link = ProviderUserInfo(
                    providerId: providerId, rawId: rawId, federatedId: try row.value("link_federated_id") ?? rawId,
                    email: try row.value("link_email"), displayName: try row.value("link_display_name"),
                    photoUrl: try row.value("link_photo_url"), screenName: try row.value("link_screen_name"))
            }
        }
    }

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

    /// What the rotation function (migration 11) answers: its outcome and, when it found the session,
    /// the session's columns.
    struct RotationRow: NamedRow {
        var outcome: String
        var familyId: UUID?
        var localId: String?
        var provider: String?
        var authTime: Int64?
        var extraClaims: String?
        /// A replayed rotation's successor, sealed as it was first answered.
        var sealed: String?
        var tokenIssuedAt: Int64?
        /// The second factor the session was signed in with (migration 23), read beside the rotation.
        var secondFactor: String?
        var secondFactorId: String?

        init(_ row: PostgresRandomAccessRow) throws {
            outcome = try row.value("o_outcome")
            familyId = try row.value("o_family")
            localId = try row.value("o_local_id")
            provider = try row.value("o_provider")
            authTime = try row.value("o_auth_time")
            extraClaims = try row.value("o_extra_claims")
            sealed = try row.value("o_sealed")
            tokenIssuedAt = try row.value("o_token_issued_at")
            secondFactor = try row.value("second_factor")
            secondFactorId = try row.value("second_factor_id")
        }
    }

    static func nowMillis() -> Int64 { RFC3339.nowMillis() }

    /// The session starts at `authTime` by the directory's clock — the clock `validSince` is written
    /// with in the same transaction, so a session started together with a credential change is never
    /// taken for an older one (the database's `now()` may lag the directory's clock across a second).
    static func createSession(
        _ connection: PostgresConnection, scope: Scope, localId: String, provider: String, authTime: Int64,
        refreshTokenHash: String, expiresAt: Int64, extraClaims: String? = nil,
        secondFactor: (kind: String, enrollmentId: String)? = nil, logger: Logger
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
        // A session signed in with a second factor says which (migration 23's table).
        if let secondFactor {
            try await connection.query(
                """
                INSERT INTO session_second_factors (tenant_id, family_id, second_factor, second_factor_id)
                VALUES (\(scope: scope), \(familyId), \(secondFactor.kind), \(secondFactor.enrollmentId))
                """, logger: logger)
        }
        var session = SessionInfo(newFamily: familyId, provider: provider, authTime: authTime, extraClaims: extraClaims)
        session.secondFactor = secondFactor?.kind
        session.secondFactorId = secondFactor?.enrollmentId
        return session
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
        guard let scope = row.scope, let localId = row.localId, let emailVerified = row.emailVerified,
            let disabled = row.disabled, let validSince = row.validSince, let createdAt = row.createdAt,
            let customAuth = row.customAuth, let emailLinkSignin = row.emailLinkSignin
        else { return }
        if byId[localId] == nil {
            var user = UserRecord(
                tenantId: scope.tenantID, localId: localId, email: row.email, emailVerified: emailVerified,
                displayName: row.displayName, photoUrl: row.photoUrl, disabled: disabled,
                customAttributes: row.customAttributes, validSince: validSince, createdAt: createdAt,
                lastLoginAt: row.lastLoginAt, lastRefreshAt: row.lastRefreshAt, passwordUpdatedAt: row.passwordUpdatedAt
            )
            user.phoneNumber = row.phoneNumber
            user.customAuth = customAuth ? true : nil
            user.emailLinkSignin = emailLinkSignin ? true : nil
            user.initialEmail = row.initialEmail
            // The password provider entry is derived, never stored: present iff an email and a password
            // or an email-link sign-in (docs/protocol/accounts.md#the-user-record).
            if let email = user.email, user.hasPassword || emailLinkSignin {
                user.providerUserInfo.append(
                    ProviderUserInfo(
                        providerId: "password", rawId: email, federatedId: email, email: email,
                        displayName: user.displayName, photoUrl: user.photoUrl))
            }
            // So is the phone entry: present iff the user has a number (docs/protocol/phone.md#the-user-record).
            // Its federatedId is the number too, which the Apple SDK reads as the entry's uid.
            if let phone = user.phoneNumber {
                user.providerUserInfo.append(
                    ProviderUserInfo(providerId: "phone", rawId: phone, federatedId: phone, phoneNumber: phone))
            }
            byId[localId] = user
        }
        if let link = row.link { byId[localId]?.providerUserInfo.append(link) }
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

    /// A user `u` and one of its provider links `l` (`AccountRows.UserRow`, which reads them by name).
    static let columns = """
        u.tenant_id, u.local_id, u.email, u.email_verified, u.display_name, u.photo_url, u.disabled,
            u.custom_attributes, u.valid_since, u.created_at, u.last_login_at, u.last_refresh_at,
            CASE WHEN u.password_hash IS NOT NULL THEN u.password_updated_at END AS password_updated_at,
            u.phone_number, u.custom_auth, u.email_link_signin, u.initial_email,
            l.provider_id AS link_provider_id, l.raw_id AS link_raw_id, l.federated_id AS link_federated_id,
            l.email AS link_email, l.display_name AS link_display_name, l.photo_url AS link_photo_url,
            l.screen_name AS link_screen_name
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

    func decodeRow(_ row: PostgresRow) throws -> Row { try Row(row.makeRandomAccess()) }
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
    static let sql = "SELECT t.disable_auth, u.credential_seq, \(UsersByID.columns) \(from)"
    /// The scope's row, the user's (or nulls) and its links, for this statement and the one with factors.
    static let from = """
        FROM tenants t
        LEFT JOIN LATERAL (
            SELECT * FROM users WHERE tenant_id = $1 AND local_id = $2 OFFSET 0) AS u ON true
        \(UsersByID.linksJoin)
        WHERE t.tenant_id = $1
        ORDER BY l.provider_id
        """
    /// The scope's `disable_auth`, the user's `credential_seq` (nil: no such user) and the user; with
    /// `UserOfEnabledScopeWithFactors`, its `mfaInfo` as JSON too.
    struct Row: NamedRow {
        var disableAuth: Bool
        var credentialSeq: Int64?
        var user: AccountRows.UserRow
        var mfaInfo: String?

        init(_ row: PostgresRandomAccessRow) throws {
            disableAuth = try row.value("disable_auth")
            credentialSeq = try row.value("credential_seq")
            user = try AccountRows.UserRow(row)
            mfaInfo = row.contains("mfa_info") ? try row.value("mfa_info") : nil
        }
    }
    var scope: Scope
    var localId: String
    var argument: String { localId }

    func decodeRow(_ row: PostgresRow) throws -> Row { try Row(row.makeRandomAccess()) }
}

/// The same, with the user's second factors as `mfaInfo` JSON (the end user's own lookup,
/// docs/protocol/mfa.md#the-factors): one statement still, the factors an index probe beside it.
struct UserOfEnabledScopeWithFactors: ScopedStatement {
    static let name = "tessera_user_of_enabled_scope_with_factors"
    static let sql = """
        SELECT t.disable_auth, u.credential_seq, \(UsersByID.columns),
            (SELECT json_agg(json_strip_nulls(json_build_object(
                    'mfaEnrollmentId', e.enrollment_id, 'displayName', e.display_name, 'phoneInfo', e.phone_number,
                    'totpInfo', CASE WHEN e.factor = 'totp' THEN '{}'::json END,
                    'enrolledAt', to_char(e.enrolled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
                    ORDER BY e.enrolled_at, e.position)::text
                FROM mfa_enrollments e WHERE e.tenant_id = u.tenant_id AND e.local_id = u.local_id) AS mfa_info
        \(UserOfEnabledScope.from)
        """
    typealias Row = UserOfEnabledScope.Row
    var scope: Scope
    var localId: String
    var argument: String { localId }

    func decodeRow(_ row: PostgresRow) throws -> Row { try Row(row.makeRandomAccess()) }
}

struct RotateRefreshToken: PostgresPreparedStatement {
    static let name = "tessera_rotate_refresh_token"
    /// The rotation (migration 11's function), then the user it read or wrote and its provider links
    /// (a row per link), as `UsersByID` returns them, and the session's second factor. The factor is read
    /// through a lateral subquery, one index probe: a plain join with the function's rows let the
    /// planner hash-join a whole table on every refresh (its row estimate for a function is 1,000),
    /// which cut refreshes per server CPU-second by three quarters in `make bench`.
    static let sql = """
        SELECT r.o_outcome, r.o_family, r.o_local_id, r.o_provider, r.o_auth_time, r.o_extra_claims, r.o_sealed,
            r.o_token_issued_at, sf.second_factor, sf.second_factor_id, \(UsersByID.columns)
        FROM tessera_rotate_refresh_token($1, $2, $3, $4, $5, $6) AS r
        CROSS JOIN LATERAL (SELECT (r.o_user).*) AS u
        LEFT JOIN LATERAL (
            SELECT second_factor, second_factor_id FROM session_second_factors
            WHERE tenant_id = r.o_scope AND family_id = r.o_family OFFSET 0) AS sf ON true
        \(UsersByID.linksJoin)
        ORDER BY l.provider_id
        """
    struct Row: NamedRow {
        var rotation: AccountRows.RotationRow
        var user: AccountRows.UserRow

        init(_ row: PostgresRandomAccessRow) throws {
            rotation = try AccountRows.RotationRow(row)
            user = try AccountRows.UserRow(row)
        }
    }
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

    func decodeRow(_ row: PostgresRow) throws -> Row { try Row(row.makeRandomAccess()) }
}
