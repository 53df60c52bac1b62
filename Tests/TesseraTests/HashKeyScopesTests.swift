import Foundation
import Logging
import PostgresNIO
import Testing

@testable import TesseraShared
@testable import UserDirectory

/// Issue 35 item 2: a hash made with the project's Firebase-scrypt key, moved into a tenant (an export
/// of the default scope imported with `tessera import --tenant`, the console's import, v1
/// `accounts:batchCreate` or v3 `uploadAccount` with the project's hashConfig), is stored marked
/// `projectKey` without the key, verifies with the key Tessera holds, is re-made with the tenant's at
/// the next sign-in, and is never exported from the tenant (docs/architecture.md, "Hash keys across
/// scopes"). Tests/stack/test_hash_key_scopes.py runs the same attack with the CLI.
@Suite("hash keys across scopes")
struct HashKeyScopesTests {
    static let project = HashKey(signerKey: Array(repeating: 7, count: 64), saltSeparator: [1])
    static let tenant = HashKey(signerKey: Array(repeating: 9, count: 64), saltSeparator: [2, 3])
    static let tenantKeys = ScopeHashKeys(own: tenant, project: project)
    static let projectKeys = ScopeHashKeys(own: project, project: project)

    /// The stored parameters batchCreate derives from a request's SCRYPT settings in a scope.
    static func stored(signer: [UInt8], separator: [UInt8], keys: ScopeHashKeys, rounds: Int = 8) throws
        -> ScryptParams
    {
        let body = #"""
            {"hashAlgorithm":"SCRYPT","signerKey":"\#(Data(signer).base64EncodedString())",
             "saltSeparator":"\#(Data(separator).base64EncodedString())","rounds":\#(rounds),"memoryCost":14}
            """#
        let request = try JSONDecoder().decode(
            ImportController<PostgresTenantStore>.Request_.self, from: Data(body.utf8))
        let settings = try #require(try ImportController<PostgresTenantStore>.hashSettings(request, keys: keys))
        #expect(settings.algorithm == StoredPassword.firebaseScrypt)
        return try JSONDecoder().decode(ScryptParams.self, from: Data(settings.params.utf8))
    }

    @Test("an import into a tenant with the project's key stores the hash marked projectKey, without the key")
    func importWithTheProjectKeyIsMarked() throws {
        let params = try Self.stored(signer: Self.project.signerKey, separator: [1], keys: Self.tenantKeys)
        #expect(params == ScryptParams(rounds: 8, memCost: 14, signerKey: nil, saltSeparator: nil, projectKey: true))
        #expect(Self.tenantKeys.key(for: params) == Self.project, "it verifies with the project's key")
        // Another salt separator is kept (it is no secret); the signer key still is not.
        let other = try Self.stored(signer: Self.project.signerKey, separator: [5], keys: Self.tenantKeys)
        #expect(other.signerKey == nil && other.projectKey == true && other.saltSeparator == "BQ==")
    }

    @Test("an import with the scope's own key is native; any other key is the importer's and is kept")
    func importWithOwnOrForeignKeys() throws {
        let own = try Self.stored(signer: Self.tenant.signerKey, separator: [2, 3], keys: Self.tenantKeys)
        #expect(own == ScryptParams(rounds: 8, memCost: 14, signerKey: nil, saltSeparator: nil, projectKey: nil))
        let inProject = try Self.stored(signer: Self.project.signerKey, separator: [1], keys: Self.projectKeys)
        #expect(inProject == own, "the project's key in the default scope is that scope's own")
        let foreignKey = Array(repeating: UInt8(4), count: 32)
        let foreign = try Self.stored(signer: foreignKey, separator: [1], keys: Self.tenantKeys)
        #expect(foreign.signerKey == Data(foreignKey).base64EncodedString() && foreign.projectKey == nil)
        #expect(Self.tenantKeys.key(for: foreign).signerKey == foreignKey)
    }

    @Test("a tenant's stored hash needs the project's key when marked, or when it names the key (stored before)")
    func needsProjectKey() {
        let hasher = PasswordHasher(pool: HashingPool(threads: 1, queueLength: 1))
        let projectB64 = Data(Self.project.signerKey).base64EncodedString()
        let cases: [(String, String, Bool)] = [
            ("SCRYPT", #"{"memCost":14,"projectKey":true,"rounds":8}"#, true),
            ("SCRYPT", #"{"memCost":14,"rounds":8,"saltSeparator":"AQ==","signerKey":"\#(projectB64)"}"#, true),
            ("HMAC_SHA256", #"{"signerKey":"\#(projectB64)"}"#, true),
            ("SCRYPT", #"{"memCost":14,"rounds":8}"#, false),
            ("SCRYPT", #"{"memCost":14,"rounds":8,"signerKey":"\#(Data([4, 4]).base64EncodedString())"}"#, false),
            ("HMAC_SHA256", #"{"signerKey":"BAQ="}"#, false),
            ("BCRYPT", "{}", false),
        ]
        for (algorithm, params, expected) in cases {
            #expect(
                Self.tenantKeys.needsProjectKey(algorithm: algorithm, params: params, hasher: hasher) == expected,
                "\(algorithm) \(params)")
            #expect(
                !Self.projectKeys.needsProjectKey(algorithm: algorithm, params: params, hasher: hasher),
                "the default scope's own key is the project's")
        }
    }

    @Test(
        "batchGet of a tenant withholds a hash stored with the project's key before imports recognised it",
        .enabled(if: PostgresSupport.available))
    func legacyRowsNamingTheProjectKeyAreWithheld() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let logger = PostgresSupport.logger
            let store = HashKeyStore()
            let admin = AdminUsers(
                client: client, hasher: PasswordHasher(pool: HashingPool(threads: 1, queueLength: 4)), hashKey: store)
            _ = try await client.query("INSERT INTO tenants (tenant_id) VALUES ('t-1')", logger: logger)
            let scope = Scope(wire: "t-1")
            let keys = try await store.get(client, scope: scope, logger: logger)
            let project = Data(keys.project.signerKey).base64EncodedString()
            let separator = Data(keys.project.saltSeparator).base64EncodedString()
            // What an import with the project's hashConfig stored until now: the key in the row.
            var legacy = ImportUser(localId: "legacy")
            legacy.password = StoredPassword(
                algorithm: "SCRYPT",
                params: #"{"memCost":14,"rounds":8,"saltSeparator":"\#(separator)","signerKey":"\#(project)"}"#,
                salt: "c2FsdA==", hash: "aGFzaA==")
            var foreign = ImportUser(localId: "foreign")
            foreign.password = StoredPassword(
                algorithm: "SCRYPT", params: #"{"memCost":14,"rounds":8,"saltSeparator":"","signerKey":"BAQ="}"#,
                salt: "c2FsdA==", hash: "aGFzaA==")
            #expect(
                try await admin.importUsers(scope: scope, users: [(0, legacy), (1, foreign)], logger: logger).isEmpty)
            let page = try await admin.batchGet(
                scope: scope, after: nil, limit: 10, foreignHashes: true, logger: logger)
            let byId = Dictionary(uniqueKeysWithValues: page.map { ($0.user.localId, $0) })
            let withheld = try #require(byId["legacy"])
            #expect(withheld.passwordHashWithheld && withheld.foreignHash == nil && withheld.passwordHash == nil)
            let kept = try #require(byId["foreign"]?.foreignHash)
            #expect(kept.signerKey == "BAQ=", "an importer's own key goes back to the scope's admins")
        }
    }

    // MARK: the attack, through both services

    /// `accounts:batchGet` of a scope as `caller`: the answer's text and its users by localId.
    static func batchGet(_ caller: HTTPCaller, _ tenant: String?, foreign: Bool) async throws -> (
        text: String, users: [String: JSONValue]
    ) {
        let directory = Directory(http: caller)
        let path = directory.accountsPath(tenant, "batchGet") + "?maxResults=1000"
        let answer = try await caller.get(path + (foreign ? "&tesseraForeignHashes=true" : ""))
        let users = try expectOK(answer)["users"]?.arrayValue ?? []
        return (
            answer.text,
            Dictionary(uniqueKeysWithValues: users.compactMap { u in u["localId"]?.stringValue.map { ($0, u) } })
        )
    }

    /// Every spelling of `key` an answer could carry (standard and URL-safe base64).
    static func spellings(_ key: [UInt8]) -> [String] {
        [Data(key).base64EncodedString(), Base64URL.encode(key)]
    }

    @Test(
        "an import takes the Firebase-scrypt mem costs Tessera itself hashes with (up to 17), not beyond",
        .enabled(if: PostgresSupport.available))
    func importTakesTesserasOwnMemCosts() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenant = try await directory.createTenantID(#""allowPasswordSignup":true"#)
            let key = Secrets.randomBytes(32)
            let salt = Secrets.randomBytes(12)
            let password = "a password hashed at mem cost 15"
            let hash = try FirebaseScrypt(signerKey: key, saltSeparator: [], rounds: 8, memCost: 15)
                .hash(password: password, salt: salt)
            let email = InProcess.uniqueEmail("memcost")
            func body(memCost: Int) -> String {
                let address = memCost == 15 ? email : "x" + email
                return #"{"hashAlgorithm":"SCRYPT","signerKey":"\#(Data(key).base64EncodedString())","#
                    + #""saltSeparator":"","rounds":8,"memoryCost":\#(memCost),"users":[{"localId":"memcost-\#(memCost)","#
                    + #""email":"\#(address)","#
                    + #""passwordHash":"\#(Data(hash).base64EncodedString())","salt":"\#(Data(salt).base64EncodedString())"}]}"#
            }
            try expectError(
                try await directory.admin.post(directory.accountsPath(tenant, "batchCreate"), body(memCost: 18)),
                "INVALID_HASH_MEMORY_COST")
            let imported = try expectOK(
                try await directory.admin.post(directory.accountsPath(tenant, "batchCreate"), body(memCost: 15)))
            #expect(imported["error"] == nil, "\(imported)")
            try expectOK(try await InProcessPasswordTests.signIn(service, tenant, email, password: password))
        }
    }

    @Test(
        "a tenant admin never gets the project's key of users moved in with its hashConfig; they sign in and are re-hashed",
        .enabled(if: PostgresSupport.available))
    func movedUsersDoNotLeakTheProjectKey() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let p = InProcess.projectID
            // The project admin: users of the default scope, their hashes, the project's hashConfig.
            let config = try #require(
                try expectOK(try await directory.admin.get("/v2/projects/\(p)/config"))["signIn"]?["hashConfig"])
            let projectKey = try #require(config["signerKey"]?.stringValue.flatMap { Data(base64Encoded: $0) })
            let password = "moved password 1"
            var moved: [(localId: String, email: String)] = []
            for _ in 0..<2 {
                let email = InProcess.uniqueEmail("moved")
                let created = try expectOK(
                    try await directory.admin.post(
                        "/v1/projects/\(p)/accounts", #"{"email":"\#(email)","password":"\#(password)"}"#))
                moved.append((try #require(created["localId"]?.stringValue), email))
            }
            let exported = try await Self.batchGet(directory.admin, nil, foreign: true).users
            func wireUser(_ index: Int) throws -> String {
                let user = try #require(exported[moved[index].localId])
                let hash = try #require(user["passwordHash"]?.stringValue)
                let salt = try #require(user["salt"]?.stringValue)
                return #"{"localId":"\#(moved[index].localId)","email":"\#(moved[index].email)","#
                    + #""passwordHash":"\#(hash)","salt":"\#(salt)"}"#
            }
            let hashSettings = #"""
                "hashAlgorithm":"SCRYPT","signerKey":"\#(config["signerKey"]?.stringValue ?? "")",
                "saltSeparator":"\#(config["saltSeparator"]?.stringValue ?? "")",
                "rounds":\#(config["rounds"]?.intValue ?? 0),"memoryCost":\#(config["memoryCost"]?.intValue ?? 0)
                """#

            // Into a tenant: v1 batchCreate, and v3 uploadAccount through the token service.
            let tenant = try await directory.createTenantID(#""allowPasswordSignup":true"#)
            let first = try wireUser(0)
            let second = try wireUser(1)
            try expectOK(
                try await directory.admin.post(
                    directory.accountsPath(tenant, "batchCreate"), "{\(hashSettings),\"users\":[\(first)]}"))
            try expectOK(
                try await service.client.key(nil).bearer(InProcess.adminToken).post(
                    "/identitytoolkit/v3/relyingparty/uploadAccount",
                    "{\(hashSettings),\"targetProjectId\":\"\(p)\",\"tenantId\":\"\(tenant)\",\"users\":[\(second)]}"))
            // And a user hashed with a key of the importer's own: that key may go back to the tenant's admins.
            let ownKey = Secrets.randomBytes(32)
            let ownSalt = Secrets.randomBytes(12)
            let ownHash = try FirebaseScrypt(signerKey: ownKey, saltSeparator: [], rounds: 8, memCost: 8)
                .hash(password: password, salt: ownSalt)
            let foreignEmail = InProcess.uniqueEmail("foreign")
            try expectOK(
                try await directory.admin.post(
                    directory.accountsPath(tenant, "batchCreate"),
                    #"{"hashAlgorithm":"SCRYPT","signerKey":"\#(Data(ownKey).base64EncodedString())","#
                        + #""saltSeparator":"","rounds":8,"memoryCost":8,"users":[{"localId":"foreign-1","#
                        + #""email":"\#(foreignEmail)","passwordHash":"\#(Data(ownHash).base64EncodedString())","#
                        + #""salt":"\#(Data(ownSalt).base64EncodedString())"}]}"#))

            // The tenant's admin reads everything it can: the project's key is nowhere, nor the hashes.
            let secret = try #require(
                try expectOK(
                    try await directory.admin.post("/v2/projects/\(p)/tenants/\(tenant)/adminCredentials", "{}"))[
                        "secret"]?.stringValue)
            let tenantAdmin = directory.http.bearer(secret)
            let movedHashes = try moved.indices.map { try #require(exported[moved[$0].localId]?["passwordHash"]) }
            var answers: [String] = []
            for foreign in [false, true] {
                let (text, users) = try await Self.batchGet(tenantAdmin, tenant, foreign: foreign)
                answers.append(text)
                for user in moved {
                    let seen = try #require(users[user.localId])
                    #expect(seen["passwordHash"] == nil && seen["salt"] == nil && seen["tesseraPasswordHash"] == nil)
                    #expect(seen["tesseraPasswordHashWithheld"]?.boolValue == (foreign ? true : nil), "\(seen)")
                }
                if foreign {
                    let kept = try #require(users["foreign-1"]?["tesseraPasswordHash"])
                    #expect(kept["signerKey"]?.stringValue == Data(ownKey).base64EncodedString())
                }
            }
            answers.append(
                try await service.client.key(nil).bearer(secret).post(
                    "/identitytoolkit/v3/relyingparty/downloadAccount",
                    #"{"targetProjectId":"\#(p)","tenantId":"\#(tenant)","maxResults":1000}"#
                ).text)
            // The project admin's export of the tenant withholds them too: it may reach the tenant's admins.
            answers.append(try await Self.batchGet(directory.admin, tenant, foreign: true).text)
            for text in answers {
                for spelling in Self.spellings(Array(projectKey)) {
                    #expect(!text.contains(spelling), "the project's signer key in \(text.prefix(300))")
                }
                for hash in movedHashes { #expect(!text.contains(hash.stringValue ?? "?")) }
            }

            // The moved users sign in with their passwords; the sign-in re-makes each hash with the
            // tenant's key, which the tenant's own hashConfig then describes.
            let tenantConfig = try #require(
                try expectOK(try await tenantAdmin.get("/v2/projects/\(p)/tenants/\(tenant)"))["hashConfig"])
            let tenantKey = try #require(tenantConfig["signerKey"]?.stringValue.flatMap { Data(base64Encoded: $0) })
            let tenantSeparator = try #require(
                tenantConfig["saltSeparator"]?.stringValue.flatMap { Data(base64Encoded: $0) })
            for user in moved {
                try expectOK(try await InProcessPasswordTests.signIn(service, tenant, user.email, password: password))
            }
            try expectOK(try await InProcessPasswordTests.signIn(service, tenant, foreignEmail, password: password))
            let (text, after) = try await Self.batchGet(tenantAdmin, tenant, foreign: true)
            for spelling in Self.spellings(Array(projectKey)) { #expect(!text.contains(spelling)) }
            for localId in moved.map(\.localId) + ["foreign-1"] {
                let seen = try #require(after[localId])
                #expect(seen["tesseraPasswordHashWithheld"] == nil && seen["tesseraPasswordHash"] == nil)
                let hash = try #require(seen["passwordHash"]?.stringValue.flatMap { Data(base64Encoded: $0) })
                let salt = try #require(seen["salt"]?.stringValue.flatMap { Data(base64Encoded: $0) })
                let withTenantKey = FirebaseScrypt(
                    signerKey: Array(tenantKey), saltSeparator: Array(tenantSeparator), rounds: 8, memCost: 8)
                #expect(try withTenantKey.verify(password: password, salt: Array(salt), expected: Array(hash)))
                let withProjectKey = FirebaseScrypt(
                    signerKey: Array(projectKey), saltSeparator: Array(tenantSeparator), rounds: 8, memCost: 8)
                #expect(!(try withProjectKey.verify(password: password, salt: Array(salt), expected: Array(hash))))
            }
            try expectOK(try await InProcessPasswordTests.signIn(service, tenant, moved[0].email, password: password))
        }
    }
}
