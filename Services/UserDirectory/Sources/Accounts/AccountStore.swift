import Foundation
import Logging
import PostgresNIO
import Synchronization
import TesseraShared

/// Users, their provider links and their sessions (refresh-token families). Every method takes the
/// scope key (tenant id, "" for the default scope) and every statement filters by it.
public protocol AccountStore: Sendable {
    /// Creates an anonymous user and its first session, after checking the scope's switches.
    func signUpAnonymous(
        scope: Scope, refreshTokenHash: String, sessionExpiresAt: Int64, clientIP: String?, logger: Logger
    ) async throws -> (UserRecord, SessionInfo)
    /// A user for an end-user call: checks that the scope exists and is enabled.
    func userForClient(scope: Scope, localId: String, logger: Logger) async throws -> UserRecord
    /// Deletes a user on the user's own request (`disabledUserDeletion` applies).
    func deleteByUser(scope: Scope, localId: String, logger: Logger) async throws
    /// Deletes a user for an admin; false if there was none.
    func delete(scope: Scope, localId: String, logger: Logger) async throws -> Bool
    func rotateRefreshToken(_ request: RotateRefreshTokenRequest, logger: Logger) async throws
        -> RotateRefreshTokenResponse
    func signUpPassword(_ request: SignUpPasswordRequest, logger: Logger) async throws -> (UserRecord, SessionInfo)
    func signInWithPassword(_ request: SignInWithPasswordRequest, logger: Logger) async throws
        -> (UserRecord, SessionInfo)
    func authMethods(_ request: AuthMethodsRequest, logger: Logger) async throws -> AuthMethodsResponse
    func updateAccount(_ request: UpdateAccountRequest, logger: Logger) async throws -> UpdateAccountResponse
    func sendOobCode(_ request: SendOobCodeRequest, logger: Logger) async throws -> SendOobCodeResponse
    func resetPassword(_ request: ResetPasswordRequest, logger: Logger) async throws -> OobCodeResponse
    func applyOobCode(_ request: ApplyOobCodeRequest, logger: Logger) async throws -> OobCodeResponse
    /// An admin's change to a user; nil if there is no such user.
    func adminUpdate(scope: Scope, localId: String, change: AdminUserChange, logger: Logger) async throws
        -> UserRecord?
    func adminCreate(scope: Scope, user: AdminNewUser, logger: Logger) async throws -> UserRecord
    func adminLookup(
        scope: Scope, localIds: [String], emails: [String], phoneNumbers: [String],
        federated: [(providerId: String, rawId: String)], logger: Logger
    ) async throws -> [UserRecord]
    func batchGet(scope: Scope, after: String?, limit: Int, logger: Logger) async throws -> [ExportedUser]
    func batchDelete(scope: Scope, localIds: [String], force: Bool, logger: Logger) async throws
        -> [(index: Int, localId: String)]
    func idpConfig(_ request: IdpConfigRequest, logger: Logger) async throws -> IdpConfigResponse
    func signInWithIdp(_ request: SignInWithIdpRequest, logger: Logger) async throws -> SignInWithIdpResponse
    func signInWithCustomToken(_ request: SignInWithCustomTokenRequest, logger: Logger) async throws
        -> SignInWithCustomTokenResponse
    func signInWithEmailLink(_ request: SignInWithEmailLinkRequest, logger: Logger) async throws
        -> SignInWithEmailLinkResponse
}

/// What an admin may change with `accounts:update` (B.2.3). Admin calls ignore the self-service
/// switches and work on disabled users.
public struct AdminUserChange: Sendable {
    public var disabled: Bool?
    public var emailVerified: Bool?
    /// Seconds; tokens issued before it are refused.
    public var validSince: Int64?
    public var displayName: String?
    public var photoUrl: String?
    public var deleteDisplayName = false
    public var deletePhotoUrl = false
    /// Normalised.
    public var email: String?
    public var deleteEmail = false
    public var password: String?
    public var phoneNumber: String?
    public var deletePhoneNumber = false
    /// Validated claims text; `.some(nil)` clears them.
    public var customAttributes: String??
    /// Federated providers to unlink (`password` and `phone` are handled by their own fields).
    public var deleteProviders: [String] = []

    public init() {}
}

public struct PostgresAccountStore: AccountStore {
    let client: PostgresClient
    let anonymousRetention: Duration
    let hasher: PasswordHasher
    let hashKey = HashKeyStore()
    let oobCodeTTL: Duration
    /// Mail work done after the answer (protected password resets).
    let detachedWork = DetachedWork(limit: 256)

    public init(
        client: PostgresClient, anonymousRetention: Duration, hasher: PasswordHasher,
        oobCodeTTL: Duration = .seconds(3600)
    ) {
        self.client = client
        self.anonymousRetention = anonymousRetention
        self.hasher = hasher
        self.oobCodeTTL = oobCodeTTL
    }

    static func nowMillis() -> Int64 { RFC3339.nowMillis() }

    public func signUpAnonymous(
        scope: Scope, refreshTokenHash: String, sessionExpiresAt: Int64, clientIP: String? = nil, logger: Logger
    ) async throws -> (UserRecord, SessionInfo) {
        let retentionSeconds = anonymousRetention.timeInterval
        return try await client.transaction(logger: logger) { connection in
            let flags = try await ScopeFlags.read(connection, scope: scope, lock: true, logger: logger)
            if !flags.enableAnonymousUser { throw FirebaseError.invalid(.adminOnlyOperation) }
            try await flags.admitNewAccount(connection, scope: scope, clientIP: clientIP, logger: logger)
            let autodelete = flags.autodeleteAnonymousUsers

            let now = Self.nowMillis()
            let nowSeconds = now / 1000
            let localId = Secrets.randomAlphanumeric(28)
            let familyId = UUID()
            // The user, its session and the session's first token in one statement (one round trip).
            try await connection.query(
                """
                WITH new_user AS (
                    INSERT INTO users (tenant_id, local_id, valid_since, created_at, last_login_at, last_refresh_at,
                        is_anonymous, anonymous_due_at)
                    VALUES (\(scope), \(localId), \(nowSeconds), \(now), \(now), \(now), true,
                        CASE WHEN \(autodelete) THEN now() + make_interval(secs => \(retentionSeconds)) END)
                ), new_family AS (
                    INSERT INTO refresh_families (tenant_id, family_id, local_id, sign_in_provider, auth_time,
                        expires_at, created_at)
                    VALUES (\(scope), \(familyId), \(localId), 'anonymous', \(nowSeconds),
                        to_timestamp(\(Double(sessionExpiresAt))), to_timestamp(\(Double(nowSeconds))))
                )
                INSERT INTO refresh_tokens (token_hash, tenant_id, family_id, issued_at)
                VALUES (\(refreshTokenHash), \(scope), \(familyId), \(nowSeconds))
                """, logger: logger)
            let session = SessionInfo(
                newFamily: familyId, provider: "anonymous", authTime: nowSeconds, extraClaims: nil)
            let user = UserRecord(
                tenantId: scope.tenantID, localId: localId, validSince: nowSeconds, createdAt: now,
                lastLoginAt: now, lastRefreshAt: now)
            return (user, session)
        }
    }

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
                VALUES (\(scope), \(familyId), \(localId), \(provider), \(authTime),
                    to_timestamp(\(Double(expiresAt))), \(extraClaims), to_timestamp(\(Double(authTime))))
            )
            INSERT INTO refresh_tokens (token_hash, tenant_id, family_id, issued_at)
            VALUES (\(refreshTokenHash), \(scope), \(familyId), \(authTime))
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

    /// A user as its own client sees it (`accounts:lookup`): one statement checks the scope and reads
    /// the user with its links.
    public func userForClient(scope: Scope, localId: String, logger: Logger) async throws -> UserRecord {
        var scopeDisabled: Bool?
        var users = UserRows()
        for try await (disabled, user) in try await client.execute(
            UserOfEnabledScope(scope: scope, localId: localId), logger: logger)
        {
            scopeDisabled = disabled
            users.add(user)
        }
        guard let scopeDisabled else { throw FirebaseError.invalid(.tenantNotFound) }
        if scopeDisabled { throw FirebaseError.invalid(.projectDisabled) }
        guard let user = users.byId[localId] else { throw FirebaseError.invalid(.userNotFound) }
        return user
    }

    public func deleteByUser(scope: Scope, localId: String, logger: Logger) async throws {
        try await client.transaction(logger: logger) { connection in
            let flags = try await ScopeFlags.read(connection, scope: scope, lock: true, logger: logger)
            if flags.disabledUserDeletion { throw FirebaseError.invalid(.adminOnlyOperation) }
            if !(try await Self.deleteUser(connection, scope: scope, localId: localId, logger: logger)) {
                throw FirebaseError.invalid(.userNotFound)
            }
        }
    }

    /// Deletes a user with its provider links and revokes its sessions, in the caller's transaction.
    static func deleteUser(_ connection: PostgresConnection, scope: Scope, localId: String, logger: Logger)
        async throws -> Bool
    {
        let deleted = try await connection.query(
            "DELETE FROM users WHERE tenant_id = \(scope) AND local_id = \(localId) RETURNING local_id",
            logger: logger)
        var found = false
        for try await _ in deleted.decode(String.self) { found = true }
        guard found else { return false }
        try await connection.query(
            """
            UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'user_deleted'
            WHERE tenant_id = \(scope) AND local_id = \(localId) AND revoked_at IS NULL
            """, logger: logger)
        return true
    }

    public func delete(scope: Scope, localId: String, logger: Logger) async throws -> Bool {
        try await client.transaction(logger: logger) { connection in
            try await Self.deleteUser(connection, scope: scope, localId: localId, logger: logger)
        }
    }

    public func adminUpdate(scope: Scope, localId: String, change: AdminUserChange, logger: Logger) async throws
        -> UserRecord?
    {
        var stored: StoredPassword?
        if let password = change.password {
            stored = try await hasher.hash(
                password, key: try await hashKey.get(client, scope: scope, logger: logger).own)
        }
        do {
            return try await client.transaction(logger: logger) { connection in
                guard try await Self.lockUser(connection, scope: scope, localId: localId, logger: logger),
                    let before = try await Self.fetchUsers(
                        connection, scope: scope, localIds: [localId], logger: logger
                    )
                    .first
                else { return nil }
                let now = Self.nowMillis()
                let email = change.deleteEmail ? nil : (change.email ?? before.email)
                let emailChanged = email != before.email
                // A new email is unverified unless the same call says otherwise.
                let emailVerified = change.emailVerified ?? (emailChanged ? false : before.emailVerified)
                let phone = change.deletePhoneNumber ? nil : (change.phoneNumber ?? before.phoneNumber)
                let claims: String? = change.customAttributes ?? before.customAttributes
                let credentialsChanged = stored != nil || emailChanged
                // A disable ends every session and ID token issued before it, for good (A.2): enabling the
                // user again does not bring them back. `validSince` does it; the families stay unrevoked
                // so that a refresh while disabled still answers USER_DISABLED (B.2.2), TOKEN_EXPIRED after.
                let disabling = change.disabled == true && !before.disabled
                try await connection.query(
                    """
                    UPDATE users SET disabled = coalesce(\(change.disabled), disabled),
                        email = \(email), email_verified = \(emailVerified), phone_number = \(phone),
                        custom_attributes = \(claims),
                        valid_since = CASE WHEN \(credentialsChanged || disabling) THEN \(now / 1000)
                            ELSE coalesce(\(change.validSince), valid_since) END,
                        display_name = CASE WHEN \(change.deleteDisplayName) THEN NULL
                            ELSE coalesce(\(change.displayName), display_name) END,
                        photo_url = CASE WHEN \(change.deletePhotoUrl) THEN NULL
                            ELSE coalesce(\(change.photoUrl), photo_url) END
                    WHERE tenant_id = \(scope) AND local_id = \(localId)
                    """, logger: logger)
                if let stored {
                    try await connection.query(
                        """
                        UPDATE users SET password_algorithm = \(stored.algorithm), password_params = \(stored.params),
                            password_salt = \(stored.salt), password_hash = \(stored.hash), password_updated_at = \(now),
                            is_anonymous = false, anonymous_due_at = NULL
                        WHERE tenant_id = \(scope) AND local_id = \(localId)
                        """, logger: logger)
                }
                if !change.deleteProviders.isEmpty {
                    try await connection.query(
                        """
                        DELETE FROM provider_links
                        WHERE tenant_id = \(scope) AND local_id = \(localId) AND provider_id = ANY(\(change.deleteProviders))
                        """, logger: logger)
                }
                if credentialsChanged {
                    try await Self.revokeSessions(
                        connection, scope: scope, localId: localId, reason: "admin_change", logger: logger)
                }
                return try await Self.fetchUsers(connection, scope: scope, localIds: [localId], logger: logger).first
            }
        } catch let error as PSQLError {
            throw Self.uniqueViolation(error) ?? error
        }
    }

    /// A user's columns, then one provider link's (null for a user without links). The user's are
    /// all null in a row that has no user (a refused rotation, a lookup of no such user); `UserRows`
    /// skips those.
    typealias UserRow = (
        String?, String?, String?, Bool?, String?, String?, Bool?, String?, Int64?, Int64?, Int64?, Int64?, Int64?,
        String?, Bool?, Bool?, String?, String?, String?, String?, String?, String?, String?
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

    /// Rotates a refresh token: one statement (migration 11's function) makes every check of A.2 and
    /// the rotation atomically, under the family's row lock, and returns the user with its links.
    public func rotateRefreshToken(_ request: RotateRefreshTokenRequest, logger: Logger) async throws
        -> RotateRefreshTokenResponse
    {
        let now = Self.nowMillis()
        let rows = try await client.execute(
            RotateRefreshToken(
                tokenHash: request.tokenHash, newTokenHash: request.newTokenHash, sealed: request.sealedSuccessor,
                graceSeconds: Double(request.graceSeconds), idleSeconds: Double(request.idleSeconds), nowMillis: now),
            logger: logger)
        var answer: RotationRow?
        var users = UserRows()
        for try await (rotation, user) in rows {
            answer = rotation
            users.add(user)
        }
        guard let (outcome, _, familyId, localId, provider, authTime, extraClaims, sealed, issuedAt) = answer,
            outcome == "rotated" || outcome == "replayed", let familyId, let localId, let provider, let authTime,
            let issuedAt
        else {
            switch answer?.0 {
            case "reuse"?:
                logger.notice("refresh token reuse detected; session revoked")
                throw FirebaseError.invalid(.tokenExpired)
            case let outcome? where Self.rotationErrors.contains(outcome):
                throw FirebaseError.invalid(ErrorCode(rawValue: outcome)!)
            default:
                logger.error("unexpected refresh rotation outcome", metadata: ["outcome": "\(answer?.0 ?? "none")"])
                throw FirebaseError.internal
            }
        }
        guard let user = users.byId[localId] else { throw FirebaseError.invalid(.userNotFound) }
        let session = SessionInfo(
            familyId: familyId.uuidString.lowercased(), signInProvider: provider, authTime: authTime,
            tokenIssuedAt: issuedAt, extraClaims: extraClaims)
        if outcome == "replayed" {
            guard let sealed else { throw FirebaseError.internal }
            return .init(outcome: .replayed, user: user, session: session, sealedSuccessor: sealed)
        }
        return .init(outcome: .rotated, user: user, session: session, sealedSuccessor: nil)
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

    mutating func add(_ row: PostgresAccountStore.UserRow) {
        // Named in the order of `UsersByID.columns`.
        let (
            scope, localId, email, emailVerified, displayName, photoUrl, disabled, customAttributes, validSince,
            createdAt, lastLoginAt, lastRefreshAt, passwordUpdatedAt, phoneNumber, customAuth, emailLinkSignin,
            linkProviderId, linkRawId, linkFederatedId, linkEmail, linkDisplayName, linkPhotoUrl, linkScreenName
        ) = row
        guard let scope, let localId, let emailVerified, let disabled, let validSince, let createdAt, let customAuth,
            let emailLinkSignin
        else { return }
        if byId[localId] == nil {
            var user = UserRecord(
                tenantId: Scope(key: scope).tenantID, localId: localId, email: email, emailVerified: emailVerified,
                displayName: displayName, photoUrl: photoUrl, disabled: disabled, customAttributes: customAttributes,
                validSince: validSince, createdAt: createdAt, lastLoginAt: lastLoginAt, lastRefreshAt: lastRefreshAt,
                passwordUpdatedAt: passwordUpdatedAt)
            user.phoneNumber = phoneNumber
            user.customAuth = customAuth ? true : nil
            user.emailLinkSignin = emailLinkSignin ? true : nil
            // The password provider entry is derived, never stored: present iff an email and a password
            // or an email-link sign-in (B.6).
            if let email = user.email, user.hasPassword || emailLinkSignin {
                user.providerUserInfo.append(
                    ProviderUserInfo(
                        providerId: "password", rawId: email, federatedId: email, email: email,
                        displayName: user.displayName, photoUrl: user.photoUrl))
            }
            byId[localId] = user
        }
        if let linkProviderId, let linkRawId {
            // Every entry has a federatedId (A.11: the Apple SDK reads it as the entry's uid); an
            // imported link may have come without one, and then it is the raw id, as Firebase answers.
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
    /// The provider links `l` of the user `localId` of scope `tenant` (SQL expressions), a row each,
    /// or one row of nulls when it has none; the caller orders by `l.provider_id`. `OFFSET 0` keeps
    /// the subquery from being flattened, so it stays one index probe per user.
    static func linksJoin(tenant: String, localId: String) -> String {
        """
        LEFT JOIN LATERAL (
            SELECT * FROM provider_links WHERE tenant_id = \(tenant) AND local_id = \(localId) OFFSET 0) AS l ON true
        """
    }

    /// A user `u` and one of its provider links `l` (`UserRow`).
    static let columns = """
        u.tenant_id, u.local_id, u.email, u.email_verified, u.display_name, u.photo_url, u.disabled,
            u.custom_attributes, u.valid_since, u.created_at, u.last_login_at, u.last_refresh_at,
            CASE WHEN u.password_hash IS NOT NULL THEN u.password_updated_at END, u.phone_number, u.custom_auth,
            u.email_link_signin, l.provider_id, l.raw_id, l.federated_id, l.email, l.display_name, l.photo_url, l.screen_name
        """
    static let sql = """
        SELECT \(columns)
        FROM unnest($2::text[]) AS wanted (local_id)
        CROSS JOIN LATERAL (
            SELECT * FROM users WHERE tenant_id = $1 AND local_id = wanted.local_id OFFSET 0) AS u
        \(linksJoin(tenant: "$1", localId: "wanted.local_id"))
        ORDER BY l.provider_id
        """
    typealias Row = PostgresAccountStore.UserRow
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
        bindings.append(scope)
        bindings.append(argument)
        return bindings
    }
}

/// One user of a scope with its links, and whether the scope is disabled: no row, no such scope; user
/// columns all null, no such user. `$1` the scope, `$2` the user's id.
struct UserOfEnabledScope: ScopedStatement {
    static let name = "tessera_user_of_enabled_scope"
    static let sql = """
        SELECT t.disable_auth, \(UsersByID.columns)
        FROM tenants t
        LEFT JOIN LATERAL (
            SELECT * FROM users WHERE tenant_id = $1 AND local_id = $2 OFFSET 0) AS u ON true
        \(UsersByID.linksJoin(tenant: "$1", localId: "u.local_id"))
        WHERE t.tenant_id = $1
        ORDER BY l.provider_id
        """
    typealias Row = (Bool, PostgresAccountStore.UserRow)
    var scope: Scope
    var localId: String
    var argument: String { localId }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let r = try row.decode(
            (
                Bool, String?, String?, String?, Bool?, String?, String?, Bool?, String?, Int64?, Int64?, Int64?,
                Int64?, Int64?, String?, Bool?, Bool?, String?, String?, String?, String?, String?, String?, String?
            ).self)
        return (
            r.0,
            (
                r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8, r.9, r.10, r.11, r.12, r.13, r.14, r.15, r.16, r.17, r.18,
                r.19, r.20, r.21, r.22, r.23
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
        \(UsersByID.linksJoin(tenant: "r.o_scope", localId: "r.o_local_id"))
        ORDER BY l.provider_id
        """
    typealias Row = (PostgresAccountStore.RotationRow, PostgresAccountStore.UserRow)
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
                Int64?, String?, Bool?, Bool?, String?, String?, String?, String?, String?, String?, String?
            ).self)
        return (
            (r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8),
            (
                r.9, r.10, r.11, r.12, r.13, r.14, r.15, r.16, r.17, r.18, r.19, r.20, r.21, r.22, r.23, r.24, r.25,
                r.26, r.27, r.28, r.29, r.30, r.31
            )
        )
    }
}

/// Work that goes on after the request that started it has been answered, bounded: past `limit`
/// pieces running, `admit` says no and the caller does the work before answering.
final class DetachedWork: Sendable {
    private let running = Atomic<Int>(0)
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    struct Ticket: Sendable {
        fileprivate let owner: DetachedWork
        func done() { owner.running.subtract(1, ordering: .relaxed) }
    }

    func admit() -> Ticket? {
        guard running.add(1, ordering: .relaxed).newValue <= limit else {
            running.subtract(1, ordering: .relaxed)
            return nil
        }
        return Ticket(owner: self)
    }
}
