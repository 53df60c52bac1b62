import Foundation
import Logging
import PostgresNIO
import Synchronization
import TesseraShared

/// The hash keys (issue #23): the project's, read (and on first use generated) once per process, and
/// each tenant's own, generated on its first use and read with every operation that hashes — one
/// short statement beside a hash that takes tens of milliseconds, and never stale when a tenant is
/// deleted and its id used again.
final class HashKeyStore: Sendable {
    private let project = Mutex<HashKey?>(nil)

    func get(_ client: Database, scope: Scope, logger: Logger) async throws -> ScopeHashKeys {
        let project = try await projectKey(client, logger: logger)
        if scope.isProject { return ScopeHashKeys(own: project, project: project) }
        if let own = try await tenantKey(client, scope: scope, logger: logger) {
            return ScopeHashKeys(own: own, project: project)
        }
        // A tenant from before tenants had keys, or a new one: whichever replica gets there first
        // writes the key, everyone reads the row afterwards.
        let signer = Data(Secrets.randomBytes(64)).base64EncodedString()
        let separator = Data(Secrets.randomBytes(8)).base64EncodedString()
        try await client.query(
            """
            UPDATE tenants SET hash_signer_key = \(signer), hash_salt_separator = \(separator)
            WHERE tenant_id = \(scope: scope) AND hash_signer_key IS NULL
            """, logger: logger)
        guard let own = try await tenantKey(client, scope: scope, logger: logger) else {
            throw FirebaseError.invalid(.tenantNotFound)
        }
        return ScopeHashKeys(own: own, project: project)
    }

    private func tenantKey(_ client: Database, scope: Scope, logger: Logger) async throws -> HashKey? {
        let rows = try await client.query(
            "SELECT hash_signer_key, hash_salt_separator FROM tenants WHERE tenant_id = \(scope: scope)", logger: logger
        )
        var found = false
        for try await (signer, separator) in rows.decode((String?, String?).self) {
            found = true
            guard let signer, let separator else { return nil }
            return try Self.key(signer, separator)
        }
        if !found { throw FirebaseError.invalid(.tenantNotFound) }
        return nil
    }

    private func projectKey(_ client: Database, logger: Logger) async throws -> HashKey {
        if let key = project.withLock({ $0 }) { return key }
        let candidate = Data(Secrets.randomBytes(64)).base64EncodedString()
        try await client.query(
            "UPDATE project_config SET hash_signer_key = \(candidate) WHERE hash_signer_key IS NULL", logger: logger)
        let rows = try await client.query(
            "SELECT hash_signer_key, hash_salt_separator FROM project_config", logger: logger)
        for try await (signer, separator) in rows.decode((String, String).self) {
            let key = try Self.key(signer, separator)
            project.withLock { $0 = key }
            return key
        }
        throw FirebaseError.internal
    }

    private static func key(_ signer: String, _ separator: String) throws -> HashKey {
        guard let signerKey = Data(base64Encoded: signer), let saltSeparator = Data(base64Encoded: separator) else {
            throw FirebaseError.internal
        }
        return HashKey(signerKey: Array(signerKey), saltSeparator: Array(saltSeparator))
    }
}

/// The switches of one scope that end-user operations obey. Reading them checks that the scope
/// exists (`TENANT_NOT_FOUND`) and is enabled (`PROJECT_DISABLED`), so no operation forgets either.
struct ScopeFlags: NamedRow {
    var allowPasswordSignup: Bool
    var disabledUserSignup: Bool
    var enableAnonymousUser: Bool
    var disabledUserDeletion: Bool
    var autodeleteAnonymousUsers: Bool
    var emailPrivacy: Bool
    var rateLimits: RateLimitSettings
    var enableEmailLinkSignin: Bool
    /// The scope's multi-factor `state` is `MANDATORY` (docs/protocol/mfa.md#mandatory).
    var mfaMandatory: Bool

    /// `lock` takes a share lock on the tenant row for the rest of the transaction, so the switches
    /// cannot change under the operation.
    static func read(_ connection: PostgresConnection, scope: Scope, lock: Bool, logger: Logger) async throws
        -> ScopeFlags
    {
        let rows =
            lock
            ? try await connection.execute(ScopeFlagsLocked(scope: scope), logger: logger)
            : try await connection.execute(ScopeFlagsRead(scope: scope), logger: logger)
        for try await flags in rows { return flags }
        throw FirebaseError.invalid(.tenantNotFound)
    }
}

extension ScopeFlags {
    /// The scope's switches, on a connection of the pool's.
    static func read(_ client: Database, scope: Scope, logger: Logger) async throws -> ScopeFlags {
        try await client.withConnection { try await read($0, scope: scope, lock: false, logger: logger) }
    }

    /// The switches from a row of `ScopeFlagsRead.columns`; `PROJECT_DISABLED` for a disabled scope.
    init(_ row: PostgresRandomAccessRow) throws {
        if try row.value("disable_auth", as: Bool.self) { throw FirebaseError.invalid(.projectDisabled) }
        allowPasswordSignup = try row.value("allow_password_signup")
        disabledUserSignup = try row.value("disabled_user_signup")
        enableAnonymousUser = try row.value("enable_anonymous_user")
        disabledUserDeletion = try row.value("disabled_user_deletion")
        autodeleteAnonymousUsers = try row.value("autodelete_anonymous_users")
        emailPrivacy = try row.value("enable_improved_email_privacy")
        rateLimits = RateLimitSettings.decode(try row.value("rate_limits"))
        enableEmailLinkSignin = try row.value("enable_email_link_signin")
        // NULL in a scope whose settings were never touched: no JSON is read.
        mfaMandatory = MFAConfig.decode(try row.value("mfa_config", as: String?.self)).isMandatory
    }
}

extension ScopeFlags {
    /// An end user's call is about to create an account (docs/protocol/admin.md#self-service-settings, issue
    /// #7): refused when the scope closed sign-up (`ADMIN_ONLY_OPERATION`), or when it makes second factors
    /// mandatory and the account could never have one (docs/protocol/mfa.md#mandatory; a custom token, which
    /// the operator's backend vouches for, is `vouched`), and counted against the caller's address.
    func admitNewAccount(
        _ connection: PostgresConnection, scope: Scope, clientIP: String?, vouched: Bool = false, logger: Logger
    ) async throws {
        if disabledUserSignup { throw FirebaseError.invalid(.adminOnlyOperation) }
        if mfaMandatory, !vouched {
            throw FirebaseError.invalid(
                .adminOnlyOperation,
                "Multi-factor authentication is mandatory here: accounts are created by an administrator.")
        }
        try await RateLimiter.hit(
            connection, scope: scope, bucket: "sign_up", key: clientIP, limit: rateLimits.signUpsPerIpPerHour,
            logger: logger)
    }
}

/// Email/password sign-up and sign-in, the sign-in methods of an address, and an end user's own account
/// changes (docs/protocol/accounts.md#anonymous-sign-up, #adding-email-and-password, #one-account-per-email,
/// #password-change-and-revocation): policy (scope switches, rate limits, hashing) over the user rows.
struct PasswordAccounts: Sendable {
    let client: Database
    let hasher: PasswordHasher
    let hashKey: HashKeyStore
    /// How long the RECOVER_EMAIL code of an email change's notice lives (`TESSERA_OOB_CODE_TTL`).
    var oobCodeTTL: Duration = .seconds(3600)
}

extension PasswordAccounts {
    /// Email/password sign-up (docs/protocol/accounts.md#end-user-endpoints, #adding-email-and-password): a
    /// new user, or an existing one (`localId`) that keeps its id. Hashing happens before the transaction, so
    /// no connection waits on scrypt.
    public func signUpPassword(_ request: SignUpPasswordRequest, logger: Logger) async throws -> (
        UserRecord, SessionInfo
    ) {
        let scope = request.scope
        // A sign-up the hashing pool would refuse is refused before it reads anything (issue 37).
        hasher.pool.noteHashAsked(max(0, min(request.refusedByGate ?? 0, 100_000)))
        try hasher.pool.checkAdmission(client: request.clientIP)
        let flags = try await ScopeFlags.read(client, scope: scope, logger: logger)
        if !flags.allowPasswordSignup { throw FirebaseError.invalid(.operationNotAllowed) }
        if request.localId == nil, flags.disabledUserSignup { throw FirebaseError.invalid(.adminOnlyOperation) }
        if try await emailTaken(scope: scope, email: request.email, logger: logger) {
            throw FirebaseError.invalid(.emailExists)
        }
        let keys = try await hashKey.get(client, scope: scope, logger: logger)
        let stored = try await hasher.hash(request.password, key: keys.own, client: request.clientIP)
        do {
            return try await client.transaction(logger: logger) { connection in
                let flags = try await ScopeFlags.read(connection, scope: scope, lock: true, logger: logger)
                let now = AccountRows.nowMillis()
                let localId: String
                if let existing = request.localId {
                    guard try await AccountRows.lockUser(connection, scope: scope, localId: existing, logger: logger)
                    else {
                        throw FirebaseError.invalid(.userNotFound)
                    }
                    localId = existing
                    try await connection.query(
                        """
                        UPDATE users SET email = \(request.email), email_verified = false,
                            password_algorithm = \(stored.algorithm), password_params = \(stored.params),
                            password_salt = \(stored.salt), password_hash = \(stored.hash), password_updated_at = \(now),
                            valid_since = \(now / 1000), last_login_at = \(now), is_anonymous = false, anonymous_due_at = NULL
                        WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
                        """, logger: logger)
                    try await AccountRows.revokeSessions(
                        connection, scope: scope, localId: localId, reason: "credential_change", logger: logger)
                } else {
                    try await flags.admitNewAccount(
                        connection, scope: scope, clientIP: request.clientIP, logger: logger)
                    localId = Secrets.randomAlphanumeric(28)
                    try await connection.query(
                        """
                        INSERT INTO users (tenant_id, local_id, email, display_name, valid_since, created_at,
                            last_login_at, last_refresh_at, password_algorithm, password_params, password_salt,
                            password_hash, password_updated_at)
                        VALUES (\(scope: scope), \(localId), \(request.email), \(request.displayName), \(now / 1000), \(now),
                            \(now), \(now), \(stored.algorithm), \(stored.params), \(stored.salt), \(stored.hash), \(now))
                        """, logger: logger)
                }
                return try await AccountRows.startSession(
                    connection, scope: scope, localId: localId, provider: "password", nowMillis: now,
                    session: request.session, logger: logger)
            }
        } catch let error as PSQLError where error.has(.uniqueViolation) {
            throw FirebaseError.invalid(.emailExists)
        }
    }

    /// `accounts:signInWithPassword` (docs/protocol/accounts.md#end-user-endpoints,
    /// #email-enumeration-protection, #disabled-users). Unknown accounts cost a hash too, so that answers for
    /// known and unknown emails take comparable time. Two statements besides the hash: the scope's switches
    /// with the account, then the sign-in itself.
    public func signInWithPassword(_ request: SignInWithPasswordRequest, logger: Logger) async throws
        -> SessionCreatedResponse
    {
        let scope = request.scope
        // A sign-in the hashing pool would refuse is refused before its statement: under a storm of
        // retried refusals the database stays with the signed-in users (issue 37). Nearly every
        // sign-in hashes (a missing account burns a hash); the few that would not (an unknown tenant,
        // password sign-in off, a rate limit, an over-long password) get the retryable 503 instead of
        // their 400 while the pool is full.
        hasher.pool.noteHashAsked(max(0, min(request.refusedByGate ?? 0, 100_000)))
        try hasher.pool.checkAdmission(client: request.clientIP)
        var candidate: PasswordSignInCandidate.Row?
        for try await row in try await client.execute(
            PasswordSignInCandidate(scope: scope, email: request.email), logger: logger)
        {
            candidate = row
        }
        guard let candidate else { throw FirebaseError.invalid(.tenantNotFound) }
        let flags = candidate.flags
        let (accountId, accountDisabled) = (candidate.localId, candidate.disabled)
        if !flags.allowPasswordSignup { throw FirebaseError.invalid(.passwordLoginDisabled) }
        // Attempts are counted before any hashing, per account and per address, so guessing costs
        // the guesser, not the hashing threads.
        let perAccount = flags.rateLimits.passwordSignInsPerAccountPerHour
        let perAddress = flags.rateLimits.passwordSignInsPerIpPerHour
        if RateLimiter.applies(limit: perAccount, key: request.email)
            || RateLimiter.applies(limit: perAddress, key: request.clientIP)
        {
            try await client.transaction(logger: logger) { connection in
                try await RateLimiter.hit(
                    connection, scope: scope, bucket: "password_account", key: request.email, limit: perAccount,
                    logger: logger)
                try await RateLimiter.hit(
                    connection, scope: scope, bucket: "password_ip", key: request.clientIP, limit: perAddress,
                    logger: logger)
            }
        }
        if request.password.count > Credentials.maximumPasswordLength {
            // No password that long is ever set (docs/protocol/accounts.md#passwords): wrong without hashing
            // it (issue #23).
            throw FirebaseError.invalid(
                flags.emailPrivacy ? .invalidLoginCredentials : (accountId == nil ? .emailNotFound : .invalidPassword))
        }
        let keys = try await hashKey.get(client, scope: scope, logger: logger)
        guard let localId = accountId, let disabled = accountDisabled else {
            try await hasher.burn(request.password, key: keys.own, client: request.clientIP)
            throw FirebaseError.invalid(flags.emailPrivacy ? .invalidLoginCredentials : .emailNotFound)
        }
        // Under enumeration protection a disabled account is told apart only after its password was
        // checked: a wrong guess costs the same hashing time and gets the same answer as for any
        // other account (docs/protocol/accounts.md#email-enumeration-protection).
        if disabled, !flags.emailPrivacy { throw FirebaseError.invalid(.userDisabled) }
        guard let stored = candidate.stored else {
            try await hasher.burn(request.password, key: keys.own, client: request.clientIP)
            throw FirebaseError.invalid(flags.emailPrivacy ? .invalidLoginCredentials : .invalidPassword)
        }
        guard try await hasher.verify(request.password, stored: stored, keys: keys, client: request.clientIP) else {
            if ImportedHash.isBeyondLimits(stored) {
                logger.warning(
                    "stored password hash is beyond the import limits and never verifies: the user must reset the password",
                    metadata: [
                        "tenant.id": .string(scope.key), "user.id": .string(localId),
                        "hash.algorithm": .string(stored.algorithm),
                    ])
            }
            logger.notice(
                "password sign-in refused", metadata: ["tenant.id": .string(scope.key), "user.id": .string(localId)])
            throw FirebaseError.invalid(flags.emailPrivacy ? .invalidLoginCredentials : .invalidPassword)
        }
        if disabled { throw FirebaseError.invalid(.userDisabled) }
        // Re-hash with the current parameters on a successful sign-in (docs/protocol/accounts.md#passwords).
        let current =
            hasher.isOutdated(stored)
            ? try await hasher.hash(request.password, key: keys.own, client: request.clientIP) : stored
        let now = AccountRows.nowMillis()
        if candidate.hasFactors || flags.mfaMandatory {
            return try await signInWithSecondFactor(
                request, localId: localId, verifiedHash: stored.hash, current: current, nowMillis: now,
                emailPrivacy: flags.emailPrivacy, logger: logger)
        }
        let familyId = UUID()
        // One statement, so atomic: it signs in only if the password is still the one verified (it
        // may have changed meanwhile) and the account is still enabled.
        var users = UserRows()
        for try await row in try await client.execute(
            PasswordSignIn(
                scope: scope, localId: localId, verifiedHash: stored.hash, current: current, nowMillis: now,
                familyId: familyId, session: request.session),
            logger: logger)
        {
            users.add(row)
        }
        guard let user = users.byId[localId] else {
            throw FirebaseError.invalid(flags.emailPrivacy ? .invalidLoginCredentials : .invalidPassword)
        }
        return SessionCreatedResponse(
            user: user,
            session: SessionInfo(newFamily: familyId, provider: "password", authTime: now / 1000, extraClaims: nil))
    }

    /// The password of a user with second factors (or of any user, in a scope where they are
    /// mandatory) was right: the (re-hashed) password is written while it is still the one verified
    /// and the account is enabled, and the sign-in waits for a second factor
    /// (docs/protocol/mfa.md#signing-in), or, when the scope asks for none of the user's factors,
    /// starts its session; a mandatory scope refuses it then, and nothing is written.
    private func signInWithSecondFactor(
        _ request: SignInWithPasswordRequest, localId: String, verifiedHash: String, current: StoredPassword,
        nowMillis now: Int64, emailPrivacy: Bool, logger: Logger
    ) async throws -> SessionCreatedResponse {
        let scope = request.scope
        return try await client.transaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE users SET password_algorithm = \(current.algorithm), password_params = \(current.params),
                    password_salt = \(current.salt), password_hash = \(current.hash)
                WHERE tenant_id = \(scope: scope) AND local_id = \(localId) AND password_hash = \(verifiedHash)
                    AND NOT disabled
                RETURNING local_id
                """, logger: logger)
            var written = false
            for try await _ in rows.decode(String.self) { written = true }
            if !written { throw FirebaseError.invalid(emailPrivacy ? .invalidLoginCredentials : .invalidPassword) }
            var (user, session, challenge) = try await AccountRows.signIn(
                connection, scope: scope, localId: localId, provider: "password", nowMillis: now,
                session: request.session, logger: logger)
            if challenge == nil {
                try await connection.query(
                    "UPDATE users SET last_login_at = \(now) WHERE tenant_id = \(scope: scope) AND local_id = \(localId)",
                    logger: logger)
                user.lastLoginAt = now
            }
            var answer = SessionCreatedResponse(user: user, session: session)
            answer.secondFactor = challenge
            return answer
        }
    }

    /// What `createAuthUri` may tell about an email (docs/protocol/accounts.md#end-user-endpoints,
    /// #email-enumeration-protection).
    public func authMethods(_ request: AuthMethodsRequest, logger: Logger) async throws -> AuthMethodsResponse {
        let scope = request.scope
        let flags = try await ScopeFlags.read(client, scope: scope, logger: logger)
        if flags.emailPrivacy {
            return AuthMethodsResponse(protected: true, registered: false, signinMethods: [], allProviders: [])
        }
        let (user, oneAccountPerEmail) = try await client.withConnection { connection in
            let oneAccountPerEmail = !(try await AccountRows.allowDuplicateEmails(connection, logger: logger))
            let id = try await AccountRows.userForIdentifier(
                connection, scope: scope, email: request.email, oneAccountPerEmail: oneAccountPerEmail,
                logger: logger)
            guard let id else { return (UserRecord?.none, oneAccountPerEmail) }
            let user = try await AccountRows.fetchUsers(connection, scope: scope, localIds: [id], logger: logger).first
            return (user, oneAccountPerEmail)
        }
        guard let user else {
            return AuthMethodsResponse(protected: false, registered: false, signinMethods: [], allProviders: [])
        }
        // The `password` provider stands for two sign-in methods: a password and an email link
        // (docs/protocol/accounts.md#email-link-sign-in).
        var methods: [String] = user.hasPassword ? ["password"] : []
        if user.emailLinkSignin == true { methods.append("emailLink") }
        guard oneAccountPerEmail else {
            // With duplicate emails a provider's email names no account: only the email's own methods.
            return AuthMethodsResponse(
                protected: false, registered: true, signinMethods: methods,
                allProviders: methods.isEmpty ? [] : ["password"])
        }
        let providers = user.providerUserInfo.map(\.providerId)
        methods += providers.filter { $0 != "password" }
        return AuthMethodsResponse(
            protected: false, registered: true, signinMethods: methods, allProviders: providers)
    }

    /// An end user's `accounts:update` (docs/protocol/accounts.md#end-user-endpoints,
    /// #adding-email-and-password, #password-change-and-revocation). The caller has verified the ID token and
    /// the re-authentication window.
    public func updateAccount(_ request: UpdateAccountRequest, logger: Logger) async throws -> UpdateAccountResponse {
        let scope = request.scope
        _ = try await ScopeFlags.read(client, scope: scope, logger: logger)
        var stored: StoredPassword?
        if let password = request.password {
            stored = try await hasher.hash(
                password, key: try await hashKey.get(client, scope: scope, logger: logger).own)
        }
        let deleteAttributes = Set(request.deleteAttribute)
        let deleteProviders = Set(request.deleteProvider)
        do {
            return try await client.transaction(logger: logger) { connection in
                // Lock first, then read: the row read is the row this transaction changes.
                guard
                    try await AccountRows.lockUser(connection, scope: scope, localId: request.localId, logger: logger),
                    let before = try await AccountRows.fetchUsers(
                        connection, scope: scope, localIds: [request.localId], logger: logger
                    ).first
                else { throw FirebaseError.invalid(.userNotFound) }
                let now = AccountRows.nowMillis()
                var displayName = request.displayName ?? before.displayName
                var photoUrl = request.photoUrl ?? before.photoUrl
                if deleteAttributes.contains("DISPLAY_NAME") { displayName = nil }
                if deleteAttributes.contains("PHOTO_URL") { photoUrl = nil }
                var email = before.email
                var emailVerified = before.emailVerified
                if let newEmail = request.email, newEmail != before.email {
                    email = newEmail
                    emailVerified = false
                }
                if deleteAttributes.contains("EMAIL") {
                    email = nil
                    emailVerified = false
                }
                let removePassword =
                    stored == nil && (deleteAttributes.contains("PASSWORD") || deleteProviders.contains("password"))
                let credentialsChanged =
                    email != before.email || stored != nil || (removePassword && before.hasPassword)
                let revoking = credentialsChanged || request.revokeSessions == true
                try await connection.query(
                    """
                    UPDATE users SET display_name = \(displayName), photo_url = \(photoUrl), email = \(email),
                        email_verified = \(emailVerified),
                        valid_since = CASE WHEN \(revoking) THEN \(now / 1000) ELSE valid_since END
                    WHERE tenant_id = \(scope: scope) AND local_id = \(request.localId)
                    """, logger: logger)
                if let stored {
                    try await connection.query(
                        """
                        UPDATE users SET password_algorithm = \(stored.algorithm), password_params = \(stored.params),
                            password_salt = \(stored.salt), password_hash = \(stored.hash), password_updated_at = \(now)
                        WHERE tenant_id = \(scope: scope) AND local_id = \(request.localId)
                        """, logger: logger)
                } else if removePassword {
                    try await connection.query(
                        """
                        UPDATE users SET password_algorithm = NULL, password_params = NULL, password_salt = NULL,
                            password_hash = NULL, password_updated_at = NULL
                        WHERE tenant_id = \(scope: scope) AND local_id = \(request.localId)
                        """, logger: logger)
                }
                // Unlinking `phone` (the SDKs' unlink(user, "phone")) removes the number.
                if deleteProviders.contains("phone") {
                    try await connection.query(
                        """
                        UPDATE users SET phone_number = NULL
                        WHERE tenant_id = \(scope: scope) AND local_id = \(request.localId)
                        """, logger: logger)
                }
                let federated = Array(deleteProviders.subtracting(["password", "phone"]))
                if !federated.isEmpty {
                    try await connection.query(
                        """
                        DELETE FROM provider_links
                        WHERE tenant_id = \(scope: scope) AND local_id = \(request.localId) AND provider_id = ANY(\(federated))
                        """, logger: logger)
                }
                // Anonymous = no password, phone number or linked provider; an upgraded account is never due
                // for anonymous cleanup.
                try await connection.query(
                    """
                    UPDATE users u SET is_anonymous = u.password_hash IS NULL AND u.phone_number IS NULL
                            AND NOT u.custom_auth AND NOT EXISTS (
                            SELECT 1 FROM provider_links l WHERE l.tenant_id = u.tenant_id AND l.local_id = u.local_id),
                        anonymous_due_at = CASE WHEN u.password_hash IS NULL AND u.phone_number IS NULL
                            AND NOT u.custom_auth AND NOT EXISTS (
                            SELECT 1 FROM provider_links l WHERE l.tenant_id = u.tenant_id AND l.local_id = u.local_id)
                            THEN u.anonymous_due_at END
                    WHERE u.tenant_id = \(scope: scope) AND u.local_id = \(request.localId)
                    """, logger: logger)
                var session: SessionInfo?
                if revoking {
                    try await AccountRows.revokeSessions(
                        connection, scope: scope, localId: request.localId,
                        reason: credentialsChanged ? "credential_change" : "tokens_revoked", logger: logger)
                    session = try await AccountRows.createSession(
                        connection, scope: scope, localId: request.localId,
                        provider: stored != nil ? "password" : request.currentSignInProvider, authTime: now / 1000,
                        refreshTokenHash: request.session.refreshTokenHash, expiresAt: request.session.expiresAt,
                        logger: logger)
                }
                // The old address is told, with a code that restores it (docs/design-notes.md,
                // "Out-of-band codes and mail").
                try await OobAccounts.queueRecoverEmail(
                    connection, scope: scope, before: before, newEmail: email, linkPrefix: request.recoverLinkPrefix,
                    ttl: oobCodeTTL, logger: logger)
                guard
                    let user = try await AccountRows.fetchUsers(
                        connection, scope: scope, localIds: [request.localId], logger: logger
                    ).first
                else { throw FirebaseError.internal }
                return UpdateAccountResponse(user: user, session: session)
            }
        } catch let error as PSQLError where error.has(.uniqueViolation) {
            throw FirebaseError.invalid(.emailExists)
        }
    }

    func emailTaken(scope: Scope, email: String, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            "SELECT 1 FROM users WHERE tenant_id = \(scope: scope) AND email = \(email)", logger: logger)
        for try await _ in rows.decode(Int.self) { return true }
        return false
    }

}

/// The scope's switches (prepared: read by nearly every end-user call), `$1` the scope. A row of a
/// disabled scope is `PROJECT_DISABLED`.
protocol ScopeFlagsStatement: PostgresPreparedStatement where Row == ScopeFlags {
    var scope: Scope { get }
}

extension ScopeFlagsStatement {
    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(scope: scope)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try ScopeFlags(row.makeRandomAccess()) }
}

struct ScopeFlagsRead: ScopeFlagsStatement {
    static let name = "tessera_scope_flags"
    /// The switches, of `tenants t CROSS JOIN project_config p`.
    static let columns = """
        t.disable_auth, t.allow_password_signup, t.disabled_user_signup, t.enable_anonymous_user,
            t.disabled_user_deletion, t.autodelete_anonymous_users, p.enable_improved_email_privacy, t.rate_limits,
            t.enable_email_link_signin, t.mfa_config
        """
    static let sql = "SELECT \(columns) FROM tenants t CROSS JOIN project_config p WHERE t.tenant_id = $1"
    typealias Row = ScopeFlags
    var scope: Scope
}

/// The same, holding a share lock on the tenant row for the rest of the transaction.
struct ScopeFlagsLocked: ScopeFlagsStatement {
    static let name = "tessera_scope_flags_locked"
    static let sql = ScopeFlagsRead.sql + " FOR SHARE OF t"
    typealias Row = ScopeFlags
    var scope: Scope
}

/// A password sign-in's first read: the scope's switches (no row: no such scope) and the account
/// with that email, if any, with its stored password. `$1` the scope, `$2` the email.
struct PasswordSignInCandidate: ScopedStatement {
    static let name = "tessera_password_sign_in_candidate"
    static let sql = """
        SELECT \(ScopeFlagsRead.columns),
            u.local_id, u.disabled, u.password_algorithm, u.password_params, u.password_salt, u.password_hash,
            EXISTS (SELECT 1 FROM mfa_enrollments e WHERE e.tenant_id = u.tenant_id AND e.local_id = u.local_id)
                AS has_factors
        FROM tenants t CROSS JOIN project_config p
        LEFT JOIN users u ON u.tenant_id = t.tenant_id AND u.email = $2
        WHERE t.tenant_id = $1
        """
    /// The scope's switches (`PROJECT_DISABLED` for a disabled scope) and the account, if any.
    struct Row: NamedRow {
        var flags: ScopeFlags
        var localId: String?
        var disabled: Bool?
        /// The stored password; nil for an account without one.
        var stored: StoredPassword?
        /// The account has second factors (docs/protocol/mfa.md#signing-in).
        var hasFactors: Bool

        init(_ row: PostgresRandomAccessRow) throws {
            flags = try ScopeFlags(row)
            localId = try row.value("local_id")
            disabled = try row.value("disabled")
            hasFactors = try row.value("has_factors", as: Bool?.self) ?? false
            if let algorithm: String = try row.value("password_algorithm"),
                let params: String = try row.value("password_params"),
                let salt: String = try row.value("password_salt"), let hash: String = try row.value("password_hash")
            {
                stored = StoredPassword(algorithm: algorithm, params: params, salt: salt, hash: hash)
            }
        }
    }
    var scope: Scope
    var email: String
    var argument: String { email }

    func decodeRow(_ row: PostgresRow) throws -> Row { try Row(row.makeRandomAccess()) }
}

/// A verified password sign-in, in one statement: the login time and the (possibly re-hashed)
/// password are written only while the stored hash is still `verifiedHash` and the account is
/// enabled; the session (family and first refresh token) is created from that row, and the user
/// record comes back as `UsersByID` returns it. No rows: nothing was written.
struct PasswordSignIn: PostgresPreparedStatement {
    static let name = "tessera_password_sign_in"
    static let sql = """
        WITH u AS (
            UPDATE users SET last_login_at = $3, password_algorithm = $4, password_params = $5,
                password_salt = $6, password_hash = $7
            WHERE tenant_id = $1 AND local_id = $2 AND password_hash = $8 AND NOT disabled
            RETURNING *
        ), family AS (
            INSERT INTO refresh_families (tenant_id, family_id, local_id, sign_in_provider, auth_time,
                expires_at, created_at)
            SELECT tenant_id, $9, local_id, 'password', $3 / 1000, to_timestamp($10), to_timestamp($3 / 1000)
            FROM u
        ), token AS (
            INSERT INTO refresh_tokens (token_hash, tenant_id, family_id, issued_at)
            SELECT $11, tenant_id, $9, $3 / 1000 FROM u
        )
        SELECT \(UsersByID.columns)
        FROM u \(UsersByID.linksJoin)
        ORDER BY l.provider_id
        """
    typealias Row = AccountRows.UserRow
    var scope: Scope
    var localId: String
    var verifiedHash: String
    var current: StoredPassword
    var nowMillis: Int64
    var familyId: UUID
    var session: NewSession

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 11)
        bindings.append(scope: scope)
        bindings.append(localId)
        bindings.append(nowMillis)
        bindings.append(current.algorithm)
        bindings.append(current.params)
        bindings.append(current.salt)
        bindings.append(current.hash)
        bindings.append(verifiedHash)
        bindings.append(familyId)
        bindings.append(Double(session.expiresAt))
        bindings.append(session.refreshTokenHash)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try Row(row.makeRandomAccess()) }
}

extension AccountRows {
    /// Locks a user row for the rest of the transaction; false if there is none.
    static func lockUser(_ connection: PostgresConnection, scope: Scope, localId: String, logger: Logger) async throws
        -> Bool
    {
        let rows = try await connection.query(
            "SELECT 1 FROM users WHERE tenant_id = \(scope: scope) AND local_id = \(localId) FOR UPDATE", logger: logger
        )
        for try await _ in rows.decode(Int.self) { return true }
        return false
    }

    /// Ends every live session of a user (a credential change,
    /// docs/protocol/accounts.md#password-change-and-revocation, a disable, a revocation), or with
    /// `startedBefore` (seconds) those started before it, and moves the user's `credential_seq` (codes sent
    /// before no longer match it). A revocation in the very second `validSince` already names leaves
    /// `validSince` as it is: the moved sequence is how ID-token checks know to look at the token's session
    /// (docs/design-notes.md, "Revocation is exact").
    static func revokeSessions(
        _ connection: PostgresConnection, scope: Scope, localId: String, reason: String,
        startedBefore: Int64? = nil, logger: Logger
    ) async throws {
        // Without a time, every session: `to_timestamp('Infinity')` is PostgreSQL's `infinity`.
        let cutoff = startedBefore.map(Double.init) ?? .infinity
        try await connection.query(
            """
            UPDATE refresh_families SET revoked_at = now(), revoked_reason = \(reason)
            WHERE tenant_id = \(scope: scope) AND local_id = \(localId) AND revoked_at IS NULL
                AND created_at < to_timestamp(\(cutoff))
            """, logger: logger)
        try await connection.query(
            "UPDATE users SET credential_seq = credential_seq + 1 WHERE tenant_id = \(scope: scope) AND local_id = \(localId)",
            logger: logger)
    }
}
