import Foundation
import Hummingbird
import Logging
import PostgresNIO
import TesseraShared

/// One user of an import (`accounts:batchCreate`, docs/protocol/admin.md#admin-endpoints,
/// docs/protocol/accounts.md#the-user-record), validated.
public struct ImportUser: Sendable {
    public var localId: String
    public var email: String?
    public var emailVerified = false
    public var displayName: String?
    public var photoUrl: String?
    public var phoneNumber: String?
    public var disabled = false
    public var customAttributes: String?
    public var createdAt: Int64?
    public var lastLoginAt: Int64?
    public var password: StoredPassword?
    public var providers: [ProviderUserInfo] = []
    /// Signed in with a custom token before (UserInfo's `customAuth`): not anonymous without a password.
    public var customAuth = false
    /// Signs in by email link (UserInfo's `emailLinkSignin`): its `password` provider entry stays.
    public var emailLinkSignin = false
    /// Phone second factors (`mfaInfo`, docs/protocol/mfa.md#admins), each with a number.
    public var factors: [AdminFactor] = []
}

extension AdminUsers {
    /// One imported user as the insert reads it: a `users` row in JSON, keys named after the columns
    /// (`jsonb_populate_recordset` takes the types from the table; a nil is a missing key, NULL).
    private struct ImportRow: Encodable {
        var local_id: String
        var email: String?
        var email_verified: Bool
        var display_name: String?
        var photo_url: String?
        var phone_number: String?
        var disabled: Bool
        var custom_attributes: String?
        var created_at: Int64
        var last_login_at: Int64?
        var password_algorithm: String?
        var password_params: String?
        var password_salt: String?
        var password_hash: String?
        var password_updated_at: Int64?
        var is_anonymous: Bool
        var custom_auth: Bool
        var email_link_signin: Bool
    }

    /// One imported second factor, an `mfa_enrollments` row in JSON likewise.
    private struct FactorRow: Encodable {
        var local_id: String
        var enrollment_id: String
        var factor = "phone"
        var display_name: String?
        var phone_number: String
        var enrolled_at: String?
    }

    /// One imported provider link, a `provider_links` row in JSON likewise.
    private struct LinkRow: Encodable {
        var provider_id: String
        var raw_id: String
        var local_id: String
        var federated_id: String
        var email: String?
        var display_name: String?
        var photo_url: String?
    }

    /// Inserts users that do not collide with existing ones; returns the per-user failures. The
    /// users' localIds must be distinct. With `overwrite`, an existing account of the same localId is
    /// replaced: deleted with its links, its sessions ended and its pending codes void, then created
    /// anew from the import.
    ///
    /// The whole batch is a few statements in one transaction, whatever its size: one lookup of the
    /// provider identities other accounts hold, one multi-row insert of the users (in request order,
    /// so the first of two users with one email wins, as it would one by one), one insert of the
    /// provider links of the users created, and one lookup telling apart the two reasons a user was
    /// skipped. A row per statement cost a round trip per user.
    public func importUsers(
        scope: Scope, users candidates: [(index: Int, user: ImportUser)], overwrite: Bool = false, logger: Logger
    ) async throws -> [(index: Int, message: String)] {
        guard !candidates.isEmpty else { return [] }
        let now = AccountRows.nowMillis()
        return try await client.transaction(logger: logger) { connection in
            if overwrite {
                try await Self.deleteForOverwrite(
                    connection, scope: scope, localIds: candidates.map(\.user.localId), logger: logger)
            }
            var failures: [(index: Int, message: String)] = []
            var users = try await Self.withoutHeldIdentities(
                connection, scope: scope, candidates, failures: &failures, logger: logger)
            users = try await Self.withImportableFactors(
                connection, scope: scope, users, failures: &failures, logger: logger)
            return try await failures + insert(connection, scope: scope, users: users, now: now, logger: logger)
        }
    }

    /// Deletes the accounts an overwriting import replaces, as an admin's delete would.
    private static func deleteForOverwrite(
        _ connection: PostgresConnection, scope: Scope, localIds: [String], logger: Logger
    ) async throws {
        let deleted = try await connection.query(
            "DELETE FROM users WHERE tenant_id = \(scope: scope) AND local_id = ANY(\(localIds)) RETURNING local_id",
            logger: logger)
        var replaced: [String] = []
        for try await localId in deleted.decode(String.self) { replaced.append(localId) }
        guard !replaced.isEmpty else { return }
        try await connection.query(
            """
            UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'user_deleted'
            WHERE tenant_id = \(scope: scope) AND local_id = ANY(\(replaced)) AND revoked_at IS NULL
            """, logger: logger)
        try await connection.query(
            """
            UPDATE oob_codes SET used_at = now()
            WHERE tenant_id = \(scope: scope) AND local_id = ANY(\(replaced)) AND used_at IS NULL
            """, logger: logger)
    }

    /// The users whose provider identities no other account holds; the others fail with
    /// production's message. Within the batch, the first user naming an identity keeps it.
    private static func withoutHeldIdentities(
        _ connection: PostgresConnection, scope: Scope, _ users: [(index: Int, user: ImportUser)],
        failures: inout [(index: Int, message: String)], logger: Logger
    ) async throws -> [(index: Int, user: ImportUser)] {
        let links = users.flatMap { _, user in user.providers.map { ($0.providerId, $0.rawId) } }
        guard !links.isEmpty else { return users }
        let rows = try await connection.query(
            """
            SELECT l.provider_id, l.raw_id, l.local_id FROM provider_links l
            JOIN unnest(\(links.map(\.0)), \(links.map(\.1))) AS wanted(provider_id, raw_id)
                ON wanted.provider_id = l.provider_id AND wanted.raw_id = l.raw_id
            WHERE l.tenant_id = \(scope: scope)
            """, logger: logger)
        var holders: [String: String] = [:]
        for try await (providerId, rawId, localId) in rows.decode((String, String, String).self) {
            holders["\(providerId)\u{0}\(rawId)"] = localId
        }
        var kept: [(index: Int, user: ImportUser)] = []
        for (index, user) in users {
            let keys = user.providers.map { "\($0.providerId)\u{0}\($0.rawId)" }
            if keys.contains(where: { holders[$0].map { $0 != user.localId } ?? false }) {
                failures.append((index, "raw id exists in other account in database"))
                continue
            }
            for key in keys { holders[key] = user.localId }
            kept.append((index, user))
        }
        return kept
    }

    /// The users whose second factors can be imported, each factor's number in E.164 (or a test number
    /// of the scope), a number given twice counted once, and an id (the given one, or a new one). A
    /// user fails when a number is not one, or when an id is another user's factor's (in the scope,
    /// or an earlier user's of the batch).
    private static func withImportableFactors(
        _ connection: PostgresConnection, scope: Scope, _ users: [(index: Int, user: ImportUser)],
        failures: inout [(index: Int, message: String)], logger: Logger
    ) async throws -> [(index: Int, user: ImportUser)] {
        let given = users.flatMap { $0.user.factors.compactMap(\.enrollmentId) }
        guard users.contains(where: { !$0.user.factors.isEmpty }) else { return users }
        let phone = try await PhoneAccounts.phoneConfig(connection, scope: scope, logger: logger)
        var taken: Set<String> = []
        if !given.isEmpty {
            let rows = try await connection.query(
                """
                SELECT enrollment_id FROM mfa_enrollments
                WHERE tenant_id = \(scope: scope) AND enrollment_id = ANY(\(given))
                """, logger: logger)
            for try await id in rows.decode(String.self) { taken.insert(id) }
        }
        var kept: [(index: Int, user: ImportUser)] = []
        users: for (index, candidate) in users {
            var user = candidate
            var numbers: Set<String> = []
            var factors: [AdminFactor] = []
            for var factor in user.factors {
                guard let number = try? MultiFactorAccounts.factorNumber(factor.phoneNumber ?? "", phone: phone)
                else {
                    failures.append((index, "Phone number format is invalid"))
                    continue users
                }
                guard numbers.insert(number).inserted else { continue }
                factor.phoneNumber = number
                factor.enrollmentId = factor.enrollmentId ?? MultiFactorEnrollment.newID()
                factors.append(factor)
            }
            let ids = factors.compactMap(\.enrollmentId)
            if ids.contains(where: taken.contains) {
                failures.append((index, "Enrollment id already exists."))
                continue
            }
            taken.formUnion(ids)
            user.factors = factors
            kept.append((index, user))
        }
        return kept
    }

    private func insert(
        _ connection: PostgresConnection, scope: Scope, users: [(index: Int, user: ImportUser)], now: Int64,
        logger: Logger
    ) async throws -> [(index: Int, message: String)] {
        guard !users.isEmpty else { return [] }
        let rows = users.map { _, user in
            ImportRow(
                local_id: user.localId, email: user.email, email_verified: user.emailVerified,
                display_name: user.displayName, photo_url: user.photoUrl, phone_number: user.phoneNumber,
                disabled: user.disabled, custom_attributes: user.customAttributes, created_at: user.createdAt ?? now,
                last_login_at: user.lastLoginAt, password_algorithm: user.password?.algorithm,
                password_params: user.password?.params, password_salt: user.password?.salt,
                password_hash: user.password?.hash, password_updated_at: user.password == nil ? nil : now,
                is_anonymous: user.password == nil && user.providers.isEmpty && user.email == nil
                    && user.phoneNumber == nil && !user.customAuth,
                custom_auth: user.customAuth, email_link_signin: user.emailLinkSignin && user.email != nil)
        }
        let usersJSON = String(decoding: try JSONEncoder().encode(rows), as: UTF8.self)
        let inserted = try await connection.query(
            """
            INSERT INTO users (tenant_id, local_id, email, email_verified, display_name, photo_url, phone_number,
                disabled, custom_attributes, valid_since, created_at, last_login_at, password_algorithm,
                password_params, password_salt, password_hash, password_updated_at, is_anonymous, custom_auth,
                email_link_signin)
            SELECT \(scope: scope), local_id, email, email_verified, display_name, photo_url, phone_number, disabled,
                custom_attributes, \(now / 1000), created_at, last_login_at, password_algorithm, password_params,
                password_salt, password_hash, password_updated_at, is_anonymous, custom_auth, email_link_signin
            FROM jsonb_populate_recordset(NULL::users, \(usersJSON)::jsonb) WITH ORDINALITY AS u
            ORDER BY u.ordinality
            ON CONFLICT DO NOTHING RETURNING local_id
            """, logger: logger)
        var created: Set<String> = []
        for try await localId in inserted.decode(String.self) { created.insert(localId) }

        var links: [LinkRow] = []
        for (_, user) in users where created.contains(user.localId) {
            for provider in user.providers {
                links.append(
                    LinkRow(
                        provider_id: provider.providerId, raw_id: provider.rawId, local_id: user.localId,
                        federated_id: provider.federatedId ?? provider.rawId, email: provider.email,
                        display_name: provider.displayName, photo_url: provider.photoUrl))
            }
        }
        let factors = users.filter { created.contains($0.user.localId) }.flatMap { _, user in
            user.factors.map { factor in
                FactorRow(
                    local_id: user.localId, enrollment_id: factor.enrollmentId ?? "",
                    display_name: factor.displayName, phone_number: factor.phoneNumber ?? "",
                    enrolled_at: factor.enrolledAtMillis.map { RFC3339.millis(fromEpochMillis: $0) })
            }
        }
        if !factors.isEmpty {
            let factorsJSON = String(decoding: try JSONEncoder().encode(factors), as: UTF8.self)
            try await connection.query(
                """
                INSERT INTO mfa_enrollments (tenant_id, local_id, enrollment_id, factor, display_name, phone_number,
                    enrolled_at)
                SELECT \(scope: scope), local_id, enrollment_id, factor, display_name, phone_number,
                    coalesce(enrolled_at, clock_timestamp())
                FROM jsonb_populate_recordset(NULL::mfa_enrollments, \(factorsJSON)::jsonb) WITH ORDINALITY AS f
                ORDER BY f.ordinality
                """, logger: logger)
        }
        if !links.isEmpty {
            let linksJSON = String(decoding: try JSONEncoder().encode(links), as: UTF8.self)
            try await connection.query(
                """
                INSERT INTO provider_links (tenant_id, provider_id, raw_id, local_id, federated_id, email,
                    display_name, photo_url)
                SELECT \(scope: scope), provider_id, raw_id, local_id, federated_id, email, display_name, photo_url
                FROM jsonb_populate_recordset(NULL::provider_links, \(linksJSON)::jsonb)
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }

        // A user was skipped because its localId is taken, or else its email or phone number is.
        // The localIds of one batch are distinct (the caller rejects DUPLICATE_LOCAL_ID).
        let skipped = users.filter { !created.contains($0.user.localId) }
        guard !skipped.isEmpty else { return [] }
        let existing = try await connection.query(
            """
            SELECT local_id FROM users
            WHERE tenant_id = \(scope: scope) AND local_id = ANY(\(skipped.map(\.user.localId)))
            """, logger: logger)
        var taken: Set<String> = []
        for try await localId in existing.decode(String.self) { taken.insert(localId) }
        return skipped.map { index, user in
            let message =
                taken.contains(user.localId)
                ? "localId belongs to an existing account - can not overwrite."
                : user.email != nil
                    ? "email exists in other account in database"
                    : "phone number exists in other account in database"
            return (index, message)
        }
    }
}

/// `POST …/accounts:batchCreate` (docs/protocol/admin.md#admin-endpoints,
/// docs/protocol/accounts.md#the-user-record, #firebase-scrypt): import up to 1000 users with their password
/// hashes, verified later per the declared algorithm (docs/protocol/accounts.md#passwords). The console's
/// import and v3 `uploadAccount` come here too. Firebase-scrypt hashes made with a key of Tessera's are
/// stored without it (docs/architecture.md, "Hash keys across scopes").
struct ImportController<Tenants: TenantStore> {
    let accounts: Accounts
    let tenants: Tenants

    func addRoutes(to group: RouterGroup<AdminContext>) {
        for scope in ["v1/projects/{project}", "v1/projects/{project}/tenants/{tenant}"] {
            group.post("\(scope)/accounts:batchCreate", use: batchCreate)
        }
    }

    struct ProviderWire: Decodable {
        var providerId: String?
        var rawId: String?
        var federatedId: String?
        var email: String?
        var displayName: String?
        var photoUrl: String?
    }

    struct UserWire: Decodable {
        var localId: String?
        var email: String?
        var emailVerified: Bool?
        var displayName: String?
        var photoUrl: String?
        var phoneNumber: String?
        var disabled: Bool?
        var customAttributes: String?
        var createdAt: JSONValue?
        var lastLoginAt: JSONValue?
        var passwordHash: String?
        var salt: String?
        var rawPassword: String?
        var providerUserInfo: [ProviderWire]?
        var tenantId: String?
        var mfaInfo: [JSONValue]?
        var customAuth: Bool?
        var emailLinkSignin: Bool?
    }

    struct Request_: Decodable {
        var users: [UserWire]?
        var hashAlgorithm: String?
        var signerKey: String?
        var saltSeparator: String?
        var rounds: Int?
        var memoryCost: Int?
        var cpuMemCost: Int?
        var parallelization: Int?
        var blockSize: Int?
        var dkLen: Int?
        var passwordHashOrder: String?
        var sanityCheck: Bool?
        var allowOverwrite: Bool?
        var tenantId: String?
    }

    struct Response: Encodable, Sendable {
        struct Failure: Encodable, Sendable {
            var index: Int
            var message: String
        }
        var kind = "identitytoolkit#UploadAccountResponse"
        var error: [Failure]?
    }

    /// Standard or URL-safe base64 → standard base64 of the same bytes.
    static func standardBase64(_ text: String?) -> String? {
        guard let text, let data = Base64URL.decode(text) else { return nil }
        return data.base64EncodedString()
    }

    static func millis(_ value: JSONValue?) -> Int64? {
        switch value {
        case .int(let number)?: return number
        case .string(let text)?: return Int64(text)
        default: return nil
        }
    }

    /// The request's hash settings: what is stored with each hash, and the foreign algorithms'
    /// parameters as read once for the whole request.
    struct HashSettings {
        var algorithm: String
        var params: String
        var imported: ImportedParams?

        /// Why `hash` cannot be stored with these settings (a per-user message), or nil.
        func problem(with hash: Data) -> String? {
            guard ImportedHash.Limits.hashBytes.contains(hash.count) else { return "passwordHash is invalid" }
            guard let imported else { return nil }
            return ImportedHash.Limits.hashError(hash, algorithm: algorithm, params: imported)
        }
    }

    /// The stored algorithm and parameters for the request's hash settings, in the scope whose hash
    /// keys are `keys`: a Firebase-scrypt key of Tessera's is never stored (`importedParams`).
    static func hashSettings(_ body: Request_, keys: ScopeHashKeys) throws -> HashSettings? {
        guard let algorithm = body.hashAlgorithm else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let imported: ImportedParams
        switch algorithm {
        case "SCRYPT":
            guard let key = body.signerKey.flatMap({ Base64URL.decode($0) }), !key.isEmpty else {
                throw FirebaseError.invalid(.missingSignerKey)
            }
            guard let rounds = body.rounds, (1...8).contains(rounds) else {
                throw FirebaseError.invalid(.invalidHashRounds)
            }
            // Firebase's own import stops at 14. Tessera hashes with up to 17 (TESSERA_PASSWORD_HASH_MEM_COST),
            // and a tenant moved to another deployment carries those hashes: the bound is the one
            // standard scrypt's imports have, N × r ≤ 2^20 (128 MiB), with Firebase's r = 8.
            guard let memCost = body.memoryCost, (1...17).contains(memCost) else {
                throw FirebaseError.invalid(.invalidHashMemoryCost)
            }
            let separator = Base64URL.decode(body.saltSeparator ?? "") ?? Data()
            let params = keys.importedParams(
                rounds: rounds, memCost: memCost, signer: Array(key), separator: Array(separator))
            return HashSettings(
                algorithm: StoredPassword.firebaseScrypt,
                params: String(decoding: try encoder.encode(params), as: UTF8.self))
        case "STANDARD_SCRYPT":
            imported = ImportedParams(
                cpuMemCost: body.cpuMemCost, blockSize: body.blockSize, parallelization: body.parallelization,
                dkLen: body.dkLen)
        case "BCRYPT":
            imported = ImportedParams()
        case "PBKDF2_SHA256":
            imported = ImportedParams(rounds: body.rounds)
        case "HMAC_SHA256":
            imported = ImportedParams(
                signerKey: standardBase64(body.signerKey), passwordHashOrder: body.passwordHashOrder)
        case _ where firebaseHashAlgorithms.contains(algorithm):
            throw FirebaseError.notImplemented("Importing \(algorithm) password hashes")
        default:
            // Not an algorithm Firebase knows: bad input, not a missing feature.
            throw FirebaseError.invalid(.invalidHashAlgorithm)
        }
        // The bounds a verification is held to (ImportedHash.Limits), refused for the whole request.
        if let error = ImportedHash.Limits.paramsError(algorithm: algorithm, params: imported) {
            throw FirebaseError.invalid(error)
        }
        return HashSettings(
            algorithm: algorithm, params: String(decoding: try encoder.encode(imported), as: UTF8.self),
            imported: imported)
    }

    @Sendable func batchCreate(_ request: Request, context: AdminContext) async throws -> JSONResponse<Response> {
        let body = try await request.decodeJSON(Request_.self, context: context, limit: 32 << 20)
        let scope = try await tenants.usersScope(of: context, bodyTenant: body.tenantId)
        let users = body.users ?? []
        guard !users.isEmpty else { throw FirebaseError.invalid(.missingUserAccount) }
        guard users.count <= 1000 else { throw FirebaseError.invalid(.maximumUserCountExceeded) }
        let overwrite = body.allowOverwrite == true
        let keys = try await accounts.admin.hashKey.get(accounts.admin.client, scope: scope, logger: context.logger)
        let hash = try Self.hashSettings(body, keys: keys)
        var seenIds = Set<String>()
        var seenEmails = Set<String>()
        var seenIdentities = Set<String>()
        for user in users {
            if !overwrite, let id = user.localId, !seenIds.insert(id).inserted {
                throw FirebaseError.invalid(.duplicateLocalId, id)
            }
            guard body.sanityCheck == true else { continue }
            if let email = user.email?.lowercased(), !seenEmails.insert(email).inserted {
                throw FirebaseError.invalid(.duplicateEmail, email)
            }
            for provider in user.providerUserInfo ?? [] {
                guard let providerId = provider.providerId, let rawId = provider.rawId,
                    !seenIdentities.insert("\(providerId)\u{0}\(rawId)").inserted
                else { continue }
                throw FirebaseError.invalid(.duplicateRawId, "Provider id(\(providerId)), Raw id(\(rawId))")
            }
        }
        var failures: [Response.Failure] = []
        var accepted: [(index: Int, user: ImportUser)] = []
        for (index, wire) in users.enumerated() {
            func fail(_ message: String) { failures.append(.init(index: index, message: message)) }
            guard let localId = wire.localId, !localId.isEmpty, localId.count <= 128 else {
                fail("localId is missing"); continue
            }
            if let tenant = wire.tenantId, !tenant.isEmpty, tenant != scope.tenantID {
                fail("Tenant id in userInfo does not match the tenant id in request."); continue
            }
            var user = ImportUser(localId: localId)
            if let email = wire.email {
                guard let normalized = Credentials.normalizedEmail(email) else { fail("email is invalid"); continue }
                user.email = normalized
            }
            if let phone = wire.phoneNumber {
                guard Credentials.isPhoneNumber(phone) else { fail("phone number format is invalid"); continue }
                user.phoneNumber = phone
            }
            if let claims = wire.customAttributes {
                do {
                    user.customAttributes = try CustomClaims.validate(claims)
                } catch let error as FirebaseError {
                    switch error.errorCode {
                    case .claimsTooLarge?: fail("Custom claims provided are too large.")
                    case .forbiddenClaim?: fail("Custom claims provided include a reserved claim.")
                    default: fail("Invalid custom claims provided.")
                    }
                    continue
                }
            }
            if let entries = wire.mfaInfo, !entries.isEmpty {
                // As production's import has it (the emulator's batchCreate): phone factors only, for a
                // user with a verified email, with ids of their own.
                guard let factors = try? AdminFactor.parse(entries, field: "users.mfa_info") else {
                    fail("mfaInfo is invalid"); continue
                }
                guard user.email != nil else { fail("Second factor account requires email to be presented."); continue }
                guard wire.emailVerified == true else {
                    fail("Second factor account requires email to be verified."); continue
                }
                guard factors.allSatisfy({ $0.phoneNumber != nil }) else {
                    fail("Second factor not supported."); continue
                }
                let ids = factors.compactMap(\.enrollmentId)
                guard Set(ids).count == ids.count else { fail("Enrollment id already exists."); continue }
                guard factors.count <= MultiFactorAccounts.factorsPerUser else {
                    fail("A user may have at most \(MultiFactorAccounts.factorsPerUser) second factors."); continue
                }
                user.factors = factors
            }
            if (try? Credentials.checkProfile(displayName: wire.displayName, photoUrl: wire.photoUrl)) == nil {
                fail("displayName and photoUrl must be at most 2048 characters"); continue
            }
            user.emailVerified = wire.emailVerified ?? false
            user.displayName = wire.displayName
            user.photoUrl = wire.photoUrl
            user.disabled = wire.disabled ?? false
            user.customAuth = wire.customAuth ?? false
            user.emailLinkSignin = wire.emailLinkSignin ?? false
            user.createdAt = Self.millis(wire.createdAt)
            user.lastLoginAt = Self.millis(wire.lastLoginAt)
            if let raw = wire.rawPassword {
                // The 6–4096 characters of docs/protocol/accounts.md#passwords hold for imported plain passwords too.
                guard (try? Credentials.checkPassword(raw)) != nil else {
                    fail("Password must be 6 to 4096 characters."); continue
                }
                user.password = try await accounts.admin.hasher.hash(raw, key: keys.own)
            } else if let passwordHash = wire.passwordHash {
                guard let hash else { throw FirebaseError.invalid(.missingHashAlgorithm) }
                // A hash that is not base64, is empty, or costs more than import allows fails this
                // user, instead of importing it without a password (or with one any password opens).
                guard let bytes = Base64URL.decode(passwordHash) else { fail("passwordHash is invalid"); continue }
                if let problem = hash.problem(with: bytes) { fail(problem); continue }
                user.password = StoredPassword(
                    algorithm: hash.algorithm, params: hash.params, salt: Self.standardBase64(wire.salt) ?? "",
                    hash: bytes.base64EncodedString())
            }
            var providerFailure = false
            for provider in wire.providerUserInfo ?? [] {
                // `password` and `phone` entries are derived from the user's own fields
                // (docs/protocol/accounts.md#the-user-record).
                if provider.providerId == "password" || provider.providerId == "phone" { continue }
                guard let providerId = provider.providerId, let rawId = provider.rawId ?? provider.federatedId else {
                    providerFailure = true
                    break
                }
                user.providers.append(
                    ProviderUserInfo(
                        providerId: providerId, rawId: rawId, federatedId: provider.federatedId, email: provider.email,
                        displayName: provider.displayName, photoUrl: provider.photoUrl))
            }
            if providerFailure { fail("federatedId or (providerId & rawId) is required"); continue }
            accepted.append((index, user))
        }
        if overwrite {
            // One localId twice overwrites itself: the last of them is what is stored.
            var last: [String: Int] = [:]
            for (position, entry) in accepted.enumerated() { last[entry.user.localId] = position }
            accepted = accepted.enumerated().filter { last[$0.element.user.localId] == $0.offset }.map(\.element)
        }
        let refused = try await accounts.admin.importUsers(
            scope: scope, users: accepted, overwrite: overwrite, logger: context.logger)
        failures += refused.map { Response.Failure(index: $0.index, message: $0.message) }
        failures.sort { $0.index < $1.index }
        context.logger.info(
            "users imported",
            metadata: [
                "tenant.id": .string(scope.key), "users.requested": "\(users.count)",
                "users.failed": "\(failures.count)",
            ])
        return JSONResponse(Response(error: failures.isEmpty ? nil : failures))
    }
}

/// Every `hashAlgorithm` Firebase's import accepts; those Tessera does not verify yet answer 501.
let firebaseHashAlgorithms: Set<String> = [
    "SCRYPT", "STANDARD_SCRYPT", "BCRYPT", "PBKDF2_SHA256", "PBKDF_SHA1", "HMAC_SHA512", "HMAC_SHA256", "HMAC_SHA1",
    "HMAC_MD5", "MD5", "SHA1", "SHA256", "SHA512",
]
