import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// A user an admin creates (`POST …/accounts`, docs/protocol/admin.md#admin-endpoints): fields as given,
/// password hashed.
public struct AdminNewUser: Sendable {
    public var localId: String?
    public var email: String?
    public var password: String?
    public var displayName: String?
    public var photoUrl: String?
    public var phoneNumber: String?
    public var emailVerified = false
    public var disabled = false
    /// Phone second factors (docs/protocol/mfa.md#admins).
    public var factors: [AdminFactor] = []

    public init() {}
}

/// What an export carries per user (docs/protocol/accounts.md#firebase-scrypt): the stored hash and salt of a
/// Firebase-scrypt password.
public struct ExportedUser: Sendable {
    public var user: UserRecord
    public var passwordHash: String?
    public var salt: String?
    /// A hash the scope's hash config does not describe, with the `accounts:batchCreate` settings
    /// that re-import it; only when asked for (`tesseraForeignHashes`, the `tessera export`).
    public var foreignHash: ForeignPasswordHash?
    /// The user has a password whose hash a tenant does not export, because it needs the project's
    /// key (`ScopeHashKeys.needsProjectKey`); said only when foreign hashes were asked for.
    public var passwordHashWithheld = false
}

/// A password hash with the hash settings of `accounts:batchCreate`
/// (docs/protocol/accounts.md#firebase-scrypt) that verify it: an imported hash not yet re-made at a sign-in,
/// or a Firebase-scrypt hash of other parameters.
public struct ForeignPasswordHash: Encodable, Sendable, Equatable {
    public var hashAlgorithm: String
    public var rounds: Int?
    public var memoryCost: Int?
    public var signerKey: String?
    public var saltSeparator: String?
    public var cpuMemCost: Int?
    public var blockSize: Int?
    public var parallelization: Int?
    public var dkLen: Int?
    public var passwordHashOrder: String?
    public var passwordHash: String
    public var salt: String?
}

/// What admins do to users (docs/protocol/admin.md#admin-endpoints): create, change, look up, export, delete,
/// search, import.
public struct AdminUsers: Sendable {
    let client: Database
    let hasher: PasswordHasher
    let hashKey: HashKeyStore
}

extension AdminUsers {
    /// A scope's hash config (docs/protocol/accounts.md#firebase-scrypt `signIn.hashConfig`, a tenant's
    /// `hashConfig`): what its exports' hashes need. Each tenant has its own key (issue #23); the default
    /// scope's is the project's.
    public func hashConfig(scope: Scope, logger: Logger) async throws -> (
        signerKey: String, saltSeparator: String, rounds: Int, memCost: Int
    ) {
        let key = try await hashKey.get(client, scope: scope, logger: logger).own
        return (
            Data(key.signerKey).base64EncodedString(), Data(key.saltSeparator).base64EncodedString(),
            hasher.hashConfig.rounds, hasher.hashConfig.memCost
        )
    }

    /// The batchCreate settings of a stored hash the hash config does not describe, or nil for one
    /// whose parameters cannot be read (it is then exported without a password, as before). The
    /// caller has left out the hashes a tenant withholds (`ScopeHashKeys.needsProjectKey`).
    func foreignHash(algorithm: String, params: String, hash: String, salt: String?, keys: ScopeHashKeys)
        -> ForeignPasswordHash?
    {
        var foreign = ForeignPasswordHash(hashAlgorithm: algorithm, passwordHash: hash, salt: salt)
        if algorithm == StoredPassword.firebaseScrypt {
            guard let scrypt = hasher.scryptParams(params) else { return nil }
            let key = keys.key(for: scrypt)
            foreign.rounds = scrypt.rounds
            foreign.memoryCost = scrypt.memCost
            foreign.signerKey = Data(key.signerKey).base64EncodedString()
            foreign.saltSeparator = Data(key.saltSeparator).base64EncodedString()
            return foreign
        }
        guard let imported = try? JSONDecoder().decode(ImportedParams.self, from: Data(params.utf8)) else {
            return nil
        }
        foreign.rounds = imported.rounds
        foreign.signerKey = imported.signerKey
        foreign.passwordHashOrder = imported.passwordHashOrder
        foreign.cpuMemCost = imported.cpuMemCost
        foreign.blockSize = imported.blockSize
        foreign.parallelization = imported.parallelization
        foreign.dkLen = imported.dkLen
        return foreign
    }

    /// Whether the scope's hash config describes a stored hash: a tenant's hashes made with the
    /// project's key are not (exporting them would hand the tenant's admins the project's key).
    func isDescribedByHashConfig(algorithm: String, params: String, keys: ScopeHashKeys) -> Bool {
        guard algorithm == StoredPassword.firebaseScrypt, let p = hasher.scryptParams(params),
            p.rounds == hasher.hashConfig.rounds, p.memCost == hasher.hashConfig.memCost
        else { return false }
        return keys.key(for: p).isSame(as: keys.own)
    }

    public func create(scope: Scope, user new: AdminNewUser, logger: Logger) async throws -> UserRecord {
        var stored: StoredPassword?
        if let password = new.password {
            stored = try await hasher.hash(
                password, key: try await hashKey.get(client, scope: scope, logger: logger).own)
        }
        let localId = new.localId ?? Secrets.randomAlphanumeric(28)
        do {
            return try await client.transaction(logger: logger) { connection in
                let now = AccountRows.nowMillis()
                try await connection.query(
                    """
                    INSERT INTO users (tenant_id, local_id, email, email_verified, display_name, photo_url, phone_number,
                        disabled, valid_since, created_at, password_algorithm, password_params, password_salt,
                        password_hash, password_updated_at, is_anonymous)
                    VALUES (\(scope: scope), \(localId), \(new.email), \(new.emailVerified), \(new.displayName), \(new.photoUrl),
                        \(new.phoneNumber), \(new.disabled), \(now / 1000), \(now), \(stored?.algorithm), \(stored?.params),
                        \(stored?.salt), \(stored?.hash), \(stored == nil ? nil : now), false)
                    """, logger: logger)
                if !new.factors.isEmpty {
                    try await MultiFactorAccounts.setFactors(
                        connection, scope: scope, localId: localId, factors: new.factors, logger: logger)
                }
                guard
                    let user = try await AccountRows.fetchUsers(
                        connection, scope: scope, localIds: [localId], logger: logger
                    )
                    .first
                else { throw FirebaseError.internal }
                return user
            }
        } catch let error as PSQLError {
            throw AccountRows.uniqueViolation(error) ?? error
        }
    }

    /// Users matching any of the identifiers, each once (docs/protocol/admin.md#admin-endpoints lookup; never
    /// USER_NOT_FOUND).
    public func lookup(
        scope: Scope, localIds: [String], emails: [String], phoneNumbers: [String],
        federated: [(providerId: String, rawId: String)], logger: Logger
    ) async throws -> [UserRecord] {
        try await client.withConnection { connection in
            var ids = localIds
            let lowered = emails.map { $0.lowercased() }
            let rows = try await connection.query(
                """
                SELECT local_id FROM users WHERE tenant_id = \(scope: scope)
                    AND (email = ANY(\(lowered)) OR phone_number = ANY(\(phoneNumbers)))
                """, logger: logger)
            for try await id in rows.decode(String.self) { ids.append(id) }
            for link in federated {
                let linked = try await connection.query(
                    """
                    SELECT local_id FROM provider_links
                    WHERE tenant_id = \(scope: scope) AND provider_id = \(link.providerId) AND raw_id = \(link.rawId)
                    """, logger: logger)
                for try await id in linked.decode(String.self) { ids.append(id) }
            }
            return try await MultiFactorAccounts.usersWithFactors(
                connection, scope: scope, localIds: ids, logger: logger)
        }
    }

    /// A page of users ordered by id, after `after` (docs/protocol/admin.md#admin-endpoints batchGet), with
    /// their password hashes.
    public func batchGet(
        scope: Scope, after: String?, limit: Int, foreignHashes: Bool = false, logger: Logger
    ) async throws -> [ExportedUser] {
        try await client.withConnection { connection in
            let keys = try await hashKey.get(client, scope: scope, logger: logger)
            let rows = try await connection.query(
                """
                SELECT local_id, password_algorithm, password_params, password_hash, password_salt FROM users
                WHERE tenant_id = \(scope: scope) AND local_id > \(after ?? "") ORDER BY local_id LIMIT \(limit)
                """, logger: logger)
            var page: [(String, String?, String?, String?, String?)] = []
            for try await row in rows.decode((String, String?, String?, String?, String?).self) { page.append(row) }
            let users = try await MultiFactorAccounts.usersWithFactors(
                connection, scope: scope, localIds: page.map(\.0), logger: logger)
            return zip(users, page).map { user, row in
                // Only hashes the published hash config describes are exported
                // (docs/protocol/accounts.md#firebase-scrypt); others are stripped, as production strips
                // hashes it cannot describe.
                let exportable =
                    row.1.map { self.isDescribedByHashConfig(algorithm: $0, params: row.2 ?? "", keys: keys) } ?? false
                var exported = ExportedUser(
                    user: user, passwordHash: exportable ? row.3 : nil, salt: exportable ? row.4 : nil)
                if foreignHashes, !exportable, let algorithm = row.1, let hash = row.3 {
                    // A tenant's hash that needs the project's key is withheld, from every caller: a
                    // tenant's export may reach its admins (docs/architecture.md, "Hash keys across scopes").
                    if keys.needsProjectKey(algorithm: algorithm, params: row.2 ?? "", hasher: self.hasher) {
                        exported.passwordHashWithheld = true
                    } else {
                        exported.foreignHash = self.foreignHash(
                            algorithm: algorithm, params: row.2 ?? "", hash: hash, salt: row.4, keys: keys)
                    }
                }
                return exported
            }
        }
    }

    /// Deletes many users (docs/protocol/admin.md#admin-endpoints batchDelete). Without `force` only disabled
    /// users are deleted; the others are reported. Unknown ids succeed silently.
    public func batchDelete(scope: Scope, localIds: [String], force: Bool, logger: Logger) async throws
        -> [(index: Int, localId: String)]
    {
        try await client.transaction(logger: logger) { connection in
            var refused: Set<String> = []
            if !force {
                let rows = try await connection.query(
                    "SELECT local_id FROM users WHERE tenant_id = \(scope: scope) AND local_id = ANY(\(localIds)) AND NOT disabled",
                    logger: logger)
                for try await id in rows.decode(String.self) { refused.insert(id) }
            }
            let deletable = localIds.filter { !refused.contains($0) }
            try await connection.query(
                "DELETE FROM users WHERE tenant_id = \(scope: scope) AND local_id = ANY(\(deletable))", logger: logger)
            try await connection.query(
                """
                UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'user_deleted'
                WHERE tenant_id = \(scope: scope) AND local_id = ANY(\(deletable)) AND revoked_at IS NULL
                """, logger: logger)
            return localIds.enumerated().filter { refused.contains($0.element) }.map { ($0.offset, $0.element) }
        }
    }
}

extension AccountRows {
    /// Maps a unique violation to the Firebase code of the constraint it hit.
    static func uniqueViolation(_ error: PSQLError) -> FirebaseError? {
        guard error.has(.uniqueViolation) else { return nil }
        switch error.serverInfo?[.constraintName] {
        case "users_pkey": return .invalid(.duplicateLocalId)
        case "users_email_key": return .invalid(.emailExists)
        case "users_phone_key": return .invalid(.phoneNumberExists)
        // Two admins linking one identity to two users at once: the second finds it taken.
        case "provider_links_pkey": return .invalid(.federatedUserIdAlreadyLinked)
        default: return nil
        }
    }
}

extension AdminUsers {
    public func delete(scope: Scope, localId: String, logger: Logger) async throws -> Bool {
        try await client.transaction(logger: logger) { connection in
            try await AccountRows.deleteUser(connection, scope: scope, localId: localId, logger: logger)
        }
    }

    public func update(scope: Scope, localId: String, change: AdminUserChange, logger: Logger) async throws
        -> UserRecord?
    {
        var stored: StoredPassword?
        if let password = change.password {
            stored = try await hasher.hash(
                password, key: try await hashKey.get(client, scope: scope, logger: logger).own)
        }
        do {
            return try await client.transaction(logger: logger) { connection in
                guard try await AccountRows.lockUser(connection, scope: scope, localId: localId, logger: logger),
                    let before = try await AccountRows.fetchUsers(
                        connection, scope: scope, localIds: [localId], logger: logger
                    )
                    .first
                else { return nil }
                let now = AccountRows.nowMillis()
                let email = change.deleteEmail ? nil : (change.email ?? before.email)
                let emailChanged = email != before.email
                // A new email is unverified unless the same call says otherwise.
                let emailVerified = change.emailVerified ?? (emailChanged ? false : before.emailVerified)
                let phone = change.deletePhoneNumber ? nil : (change.phoneNumber ?? before.phoneNumber)
                let claims: String? = change.customAttributes ?? before.customAttributes
                let credentialsChanged = stored != nil || emailChanged
                // A disable ends every session and ID token issued before it, for good
                // (docs/protocol/tokens.md#token-rules): enabling the user again does not bring them back.
                // `validSince` and the sessions revoked below do it (docs/design-notes.md, "Revocation is
                // exact"); a refresh while disabled still answers USER_DISABLED
                // (docs/protocol/tokens.md#the-secure-token-api), TOKEN_EXPIRED after (migration 17).
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
                    WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
                    """, logger: logger)
                if let stored {
                    try await connection.query(
                        """
                        UPDATE users SET password_algorithm = \(stored.algorithm), password_params = \(stored.params),
                            password_salt = \(stored.salt), password_hash = \(stored.hash), password_updated_at = \(now),
                            is_anonymous = false, anonymous_due_at = NULL
                        WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
                        """, logger: logger)
                }
                if !change.deleteProviders.isEmpty {
                    try await connection.query(
                        """
                        DELETE FROM provider_links
                        WHERE tenant_id = \(scope: scope) AND local_id = \(localId) AND provider_id = ANY(\(change.deleteProviders))
                        """, logger: logger)
                }
                if let identity = change.linkProvider {
                    let holders = try await connection.query(
                        """
                        SELECT local_id FROM provider_links
                        WHERE tenant_id = \(scope: scope) AND provider_id = \(identity.providerId) AND raw_id = \(identity.rawId)
                        """, logger: logger)
                    for try await holder in holders.decode(String.self) where holder != localId {
                        throw FirebaseError.invalid(.federatedUserIdAlreadyLinked)
                    }
                    _ = try await AccountRows.link(
                        connection, scope: scope, localId: localId, identity: identity, logger: logger)
                }
                // Sessions end server-side, not only by `validSince`'s whole seconds, so none started
                // before this answer survives it, not even in the same second.
                if disabling {
                    try await AccountRows.revokeSessions(
                        connection, scope: scope, localId: localId, reason: "user_disabled", logger: logger)
                } else if credentialsChanged {
                    try await AccountRows.revokeSessions(
                        connection, scope: scope, localId: localId, reason: "admin_change", logger: logger)
                } else if let validSince = change.validSince {
                    // The Admin SDKs' revokeRefreshTokens (and the console's "revoke sessions", `tessera
                    // users revoke`) set validSince to the current second of their own clock: every
                    // session started so far ends, those of this second too. The second before counts as
                    // now as well: the request may have crossed into the next second on its way (a
                    // session started just before the caller read its clock survived, one run in many of
                    // test_cli's revoke test). An earlier time ends the sessions started before it.
                    try await AccountRows.revokeSessions(
                        connection, scope: scope, localId: localId, reason: "tokens_revoked",
                        startedBefore: validSince >= now / 1000 - 1 ? nil : validSince, logger: logger)
                }
                if let factors = change.factors {
                    try await MultiFactorAccounts.setFactors(
                        connection, scope: scope, localId: localId, factors: factors, logger: logger)
                }
                return try await MultiFactorAccounts.usersWithFactors(
                    connection, scope: scope, localIds: [localId], logger: logger
                ).first
            }
        } catch let error as PSQLError {
            throw AccountRows.uniqueViolation(error) ?? error
        }
    }
}
