import Crypto
import Foundation
import HTTPTypes
import Testing
import _CryptoExtras

@testable import TesseraShared

/// Issue 23, the account findings of the outside review, as far as the API shows them: per-tenant
/// password-hash keys (1), mail codes invalidated by sequence rather than by clock (10), one account per
/// Unicode-normalized address and no mixed-script domains (11a), and bounded profile fields (11d). Each
/// test reproduces the attack as the review ran it and expects it to fail. Formerly in
/// Tests/stack/test_review_accounts.py, which keeps what needs psql or the directory's metrics.
@Suite("in-process: the review's account findings", .enabled(if: PostgresSupport.available))
struct InProcessReviewAccountsTests {
    static let password = InProcessPasswordTests.password
    /// Firebase's bound on displayName and photoUrl.
    static let maxField = 2048

    // MARK: Helpers (the stack test's)

    /// A caller with a new admin credential scoped to `tenant`.
    static func tenantCredential(_ directory: Directory, _ tenant: String) async throws -> HTTPCaller {
        let created = try expectOK(
            try await directory.admin.post(
                "/v2/projects/\(InProcess.projectID)/tenants/\(tenant)/adminCredentials", #"{"displayName":"review"}"#))
        return directory.http.bearer(try #require(created["secret"]?.stringValue))
    }

    /// Firebase scrypt: AES-256-CTR (zero nonce) of the signer key under scrypt(password, salt+separator).
    /// CTR is its own inverse: applied to a stored hash it gives back the signer key it was made with.
    static func firebaseScrypt(
        _ password: String, salt: [UInt8], key: [UInt8], separator: [UInt8], rounds: Int, memCost: Int
    ) throws -> [UInt8] {
        let derived = try KDF.Scrypt.deriveKey(
            from: Array(password.utf8), salt: salt + separator, outputByteCount: 32, rounds: 1 << memCost,
            blockSize: rounds, parallelism: 1)
        let nonce = try AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16))
        return Array(try AES._CTR.encrypt(key, using: derived, nonce: nonce))
    }

    static func bytes(_ base64: JSONValue?, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
        let text = try #require(base64?.stringValue, sourceLocation: sourceLocation)
        return Array(try #require(Data(base64Encoded: text), "not base64: \(text)", sourceLocation: sourceLocation))
    }

    /// What the review did: decrypt an exported hash with scrypt over the known password.
    static func signerKeyBehind(_ password: String, user: JSONValue, config: JSONValue) throws -> [UInt8] {
        try firebaseScrypt(
            password, salt: bytes(user["salt"]), key: bytes(user["passwordHash"]),
            separator: bytes(config["saltSeparator"]), rounds: Int(try #require(config["rounds"]?.intValue)),
            memCost: Int(try #require(config["memoryCost"]?.intValue)))
    }

    /// The users of `tenant` by localId, as `caller` exports them.
    static func batchGet(
        _ caller: HTTPCaller, _ tenant: String, foreign: Bool = false
    ) async throws -> [String: JSONValue] {
        let query = foreign ? "?tesseraForeignHashes=true" : ""
        let page = try expectOK(
            try await caller.get("/v1/projects/\(InProcess.projectID)/tenants/\(tenant)/accounts:batchGet\(query)"))
        var users: [String: JSONValue] = [:]
        for user in page["users"]?.arrayValue ?? [] { users[user["localId"]?.stringValue ?? ""] = user }
        return users
    }

    static func checkHashConfig(_ config: JSONValue?, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let config = try #require(config, sourceLocation: sourceLocation)
        #expect(config["algorithm"]?.stringValue == "SCRYPT", "\(config)", sourceLocation: sourceLocation)
        let signerKey = try bytes(config["signerKey"], sourceLocation: sourceLocation)
        let saltSeparator = try bytes(config["saltSeparator"], sourceLocation: sourceLocation)
        #expect(!signerKey.isEmpty && !saltSeparator.isEmpty, "\(config)", sourceLocation: sourceLocation)
        #expect(
            config["rounds"]?.intValue != nil && config["memoryCost"]?.intValue != nil, "\(config)",
            sourceLocation: sourceLocation)
    }

    static func projectHashConfig(_ directory: Directory) async throws -> JSONValue {
        try #require(try expectOK(try await directory.admin.get(directory.configPath))["signIn"]?["hashConfig"])
    }

    static func tenantHashConfig(_ directory: Directory, _ tenant: String) async throws -> JSONValue {
        try #require(try expectOK(try await directory.admin.get("\(directory.tenantsPath)/\(tenant)"))["hashConfig"])
    }

    /// Admin `accounts` (create a user) in a tenant; `fields` are the body's members.
    static func adminCreate(_ directory: Directory, _ tenant: String, _ fields: String) async throws -> Answer {
        try await directory.admin.post("/v1/projects/\(InProcess.projectID)/tenants/\(tenant)/accounts", "{\(fields)}")
    }

    /// The codes of the first `count` mails to `email`.
    static func mailedCodes(_ service: TokenHarness, _ email: String, _ count: Int) async throws -> [String] {
        let mails = try await InProcessEmailChangeTests.mails(service, to: email, count: count)
        try #require(mails.count >= count, "mails to \(email): \(mails.map(\.subject))")
        return try mails.prefix(count).map { try service.oobCode(inMail: $0.body) }
    }

    static func reset(_ service: TokenHarness, _ tenant: String, _ code: String, _ newPassword: String)
        async throws -> Answer
    {
        try await service.client.post(
            "/v1/accounts:resetPassword",
            #"{"tenantId":"\#(tenant)","oobCode":"\#(code)","newPassword":"\#(newPassword)"}"#)
    }

    /// `email` signs in with `current` and not with `refused`.
    static func expectPassword(
        _ service: TokenHarness, _ tenant: String, _ email: String, is current: String, isNot refused: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try expectOK(
            try await InProcessPasswordTests.signIn(service, tenant, email, password: current),
            sourceLocation: sourceLocation)
        #expect(
            try await InProcessPasswordTests.signIn(service, tenant, email, password: refused).status == .badRequest,
            sourceLocation: sourceLocation)
    }

    static func passwordTenant(_ directory: Directory) async throws -> String {
        try await directory.createTenantID(#""allowPasswordSignup":true"#)
    }

    // MARK: 1. Per-tenant hash keys

    /// The review's attack: with a tenant-scoped credential, create a user with a known password, export its
    /// hash and salt with batchGet, run scrypt over the password and AES-CTR-decrypt the hash. The plaintext
    /// is the key the hash was made with: it must be the tenant's own signer key (its hashConfig), never the
    /// project's, which protects every other scope's hashes.
    @Test("a hash a tenant admin exports decrypts to the tenant's signer key, never the project's")
    func tenantAdminCannotRecoverTheProjectSignerKey() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await Self.passwordTenant(directory)
            let call = try await Self.tenantCredential(directory, tenant)
            let email = InProcess.uniqueEmail("attack")
            let password = "known password 1"
            let created = try expectOK(
                try await call.post(
                    "/v1/projects/\(InProcess.projectID)/tenants/\(tenant)/accounts",
                    #"{"email":"\#(email)","password":"\#(password)"}"#))
            let user = try #require(try await Self.batchGet(call, tenant)[created["localId"]?.stringValue ?? ""])
            #expect(
                user["passwordHash"]?.stringValue?.isEmpty == false && user["salt"]?.stringValue?.isEmpty == false,
                "the tenant admin exports the hash: \(user)")

            let tenantConfig = try await Self.tenantHashConfig(directory, tenant)
            let projectKey = try Self.bytes(try await Self.projectHashConfig(directory)["signerKey"])
            let recovered = try Self.signerKeyBehind(password, user: user, config: tenantConfig)
            #expect(recovered != projectKey, "a tenant admin recovered the project's signer key from an exported hash")
            #expect(
                recovered == (try Self.bytes(tenantConfig["signerKey"])),
                "the exported hash is made with the tenant's own key, as its hashConfig says")
        }
    }

    /// The project admin and the tenant's scoped credential see the same hashConfig, which differs from the
    /// project's signIn.hashConfig and from any other tenant's; the project's stays hidden from the tenant
    /// credential, as does the other tenant.
    @Test("each tenant has a hashConfig of its own, shown to its admins and hidden from others")
    func eachTenantHasItsOwnHashConfigShownToItsAdmins() async throws {
        try await InProcess.withDirectory { directory in
            let p = InProcess.projectID
            let own = try await directory.createTenantID()
            let other = try await directory.createTenantID()
            let call = try await Self.tenantCredential(directory, own)

            let seenByProject = try await Self.tenantHashConfig(directory, own)
            try Self.checkHashConfig(seenByProject)
            let answer = try await call.get("/v2/projects/\(p)/tenants/\(own)")
            #expect(
                try expectOK(answer)["hashConfig"] == seenByProject,
                "the tenant's own admin sees its hashConfig: \(answer)")

            let project = try await Self.projectHashConfig(directory)
            try Self.checkHashConfig(project)
            let projectKey = try #require(project["signerKey"]?.stringValue)
            let ownKey = try #require(seenByProject["signerKey"]?.stringValue)
            #expect(ownKey != projectKey, "a tenant's signer key is not the project's")
            let otherConfig = try await Self.tenantHashConfig(directory, other)
            try Self.checkHashConfig(otherConfig)
            let otherKey = try #require(otherConfig["signerKey"]?.stringValue)
            #expect(![ownKey, projectKey].contains(otherKey), "every tenant has a signer key of its own")

            for path in ["/v2/projects/\(p)/config", "/v2/projects/\(p)/tenants/\(other)"] {
                let answer = try await call.get(path)
                #expect(answer.status == .forbidden, "\(answer)")
                #expect(!answer.text.contains(projectKey) && !answer.text.contains(otherKey), "\(answer)")
            }
        }
    }

    /// Hashes the scope's hashConfig does not describe (here PBKDF2_SHA256 and HMAC_SHA256, imported and not
    /// yet re-made at a sign-in) are stripped from a plain batchGet, as Firebase strips them; with
    /// `tesseraForeignHashes=true` (what `tessera export` asks) each comes in a `tesseraPasswordHash` object
    /// holding exactly the batchCreate settings that verify it, and a batchCreate with those settings in
    /// another tenant gives a user who signs in with the old password.
    @Test("imported hashes are exported with their settings only when asked, and re-import elsewhere")
    func importedHashesAreExportedWithTheirSettingsOnlyWhenAsked() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let source = try await Self.passwordTenant(directory)
            let target = try await Self.passwordTenant(directory)
            let password = "imported password 7"
            let salt = (0..<12).map { _ in UInt8.random(in: 0...255) }
            let key = (0..<32).map { _ in UInt8.random(in: 0...255) }
            let pbkdf2 = try KDF.Insecure.PBKDF2.deriveKey(
                from: Array(password.utf8), salt: salt, using: .sha256, outputByteCount: 32,
                unsafeUncheckedRounds: 1000
            ).withUnsafeBytes { Array($0) }
            let hmac = Array(
                HMAC<SHA256>.authenticationCode(for: salt + Array(password.utf8), using: SymmetricKey(data: key)))
            let users: [(algorithm: String, settings: [String: JSONValue], digest: [UInt8])] = [
                ("PBKDF2_SHA256", ["rounds": .int(1000)], pbkdf2),
                (
                    "HMAC_SHA256",
                    [
                        "signerKey": .string(Data(key).base64EncodedString()),
                        "passwordHashOrder": .string("SALT_AND_PASSWORD"),
                    ], hmac
                ),
            ]
            func urlSafe(_ bytes: [UInt8]) -> String {
                Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_")
            }
            func encode(_ object: [String: JSONValue]) throws -> String {
                String(decoding: try JSONEncoder().encode(JSONValue.object(object)), as: UTF8.self)
            }
            var ids: [String: (localId: String, email: String)] = [:]
            for user in users {
                let localId = "fh-\(Secrets.randomAlphanumeric(10).lowercased())"
                let email = InProcess.uniqueEmail("foreign")
                ids[user.algorithm] = (localId, email)
                var body = user.settings
                body["hashAlgorithm"] = .string(user.algorithm)
                body["users"] = .array([
                    .object([
                        "localId": .string(localId), "email": .string(email),
                        "passwordHash": .string(urlSafe(user.digest)), "salt": .string(urlSafe(salt)),
                    ])
                ])
                let answer = try await directory.admin.post(directory.accountsPath(source, "batchCreate"), encode(body))
                #expect(try expectOK(answer)["error"] == nil, "\(answer)")
            }

            let plain = try await Self.batchGet(directory.admin, source)
            let foreign = try await Self.batchGet(directory.admin, source, foreign: true)
            for user in users {
                let (localId, email) = try #require(ids[user.algorithm])
                let stripped = try #require(plain[localId])
                #expect(stripped["passwordHash"] == nil && stripped["tesseraPasswordHash"] == nil, "\(stripped)")
                let exported = try #require(foreign[localId]?["tesseraPasswordHash"]?.objectValue, "\(foreign)")
                #expect(foreign[localId]?["passwordHash"] == nil, "\(String(describing: foreign[localId]))")
                #expect(exported["hashAlgorithm"]?.stringValue == user.algorithm, "\(exported)")
                #expect(try Self.bytes(exported["passwordHash"]) == user.digest && Self.bytes(exported["salt"]) == salt)
                #expect(
                    exported.filter { !["hashAlgorithm", "passwordHash", "salt"].contains($0.key) } == user.settings,
                    "\(exported)")

                var body = exported.filter { !["passwordHash", "salt"].contains($0.key) }
                body["users"] = .array([
                    .object([
                        "localId": .string(localId), "email": .string(email),
                        "passwordHash": exported["passwordHash"] ?? .null, "salt": exported["salt"] ?? .null,
                    ])
                ])
                let answer = try await directory.admin.post(directory.accountsPath(target, "batchCreate"), encode(body))
                #expect(try expectOK(answer)["error"] == nil, "\(answer)")
                let signedIn = try expectOK(
                    try await InProcessPasswordTests.signIn(service, target, email, password: password))
                #expect(signedIn["localId"]?.stringValue == localId)
            }
        }
    }

    // MARK: 10. Codes invalidated by sequence, not by clock

    /// A PASSWORD_RESET code sent before a password change (the user's own accounts:update, then an admin's)
    /// is INVALID_OOB_CODE at once: no minute of clock tolerance keeps it alive.
    @Test("a reset code is refused once the password changed, by the user or by an admin")
    func resetCodeRefusedOnceThePasswordChanged() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await Self.passwordTenant(service.directory)
            let email = InProcess.uniqueEmail("reset")
            let session = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
            let localId = try #require(session["localId"]?.stringValue)

            try expectOK(
                try await InProcessOobTests.send(
                    service, tenant, #""requestType":"PASSWORD_RESET","email":"\#(email)""#))
            let first = try #require(try await Self.mailedCodes(service, email, 1).first)
            let changed = try expectOK(
                try await InProcessAccountUpdateTests.update(
                    service, tenant, session["idToken"]?.stringValue,
                    #""password":"changed by the user","returnSecureToken":true"#))
            try expectError(try await Self.reset(service, tenant, first, "attacker password"), "INVALID_OOB_CODE")
            try expectOK(
                try await InProcessPasswordTests.signIn(service, tenant, email, password: "changed by the user"))
            #expect(changed["localId"]?.stringValue == localId)

            try expectOK(
                try await InProcessOobTests.send(
                    service, tenant, #""requestType":"PASSWORD_RESET","email":"\#(email)""#))
            let second = try await Self.mailedCodes(service, email, 2)[1]
            try expectOK(
                try await InProcessAccountUpdateTests.update(
                    service, tenant, #""localId":"\#(localId)","password":"changed by an admin""#))
            try expectError(try await Self.reset(service, tenant, second, "attacker password"), "INVALID_OOB_CODE")
            try await Self.expectPassword(service, tenant, email, is: "changed by an admin", isNot: "attacker password")
        }
    }

    /// Two PASSWORD_RESET codes outstanding: using one ends the other.
    @Test("a reset code is refused once another reset code was used")
    func resetCodeRefusedOnceAnotherWasUsed() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await Self.passwordTenant(service.directory)
            let email = InProcess.uniqueEmail("reset2")
            try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
            for _ in 0..<2 {
                try expectOK(
                    try await InProcessOobTests.send(
                        service, tenant, #""requestType":"PASSWORD_RESET","email":"\#(email)""#))
            }
            let codes = try await Self.mailedCodes(service, email, 2)
            try expectOK(try await Self.reset(service, tenant, codes[1], "from the second code"))
            try expectError(try await Self.reset(service, tenant, codes[0], "from the first code"), "INVALID_OOB_CODE")
            try await Self.expectPassword(
                service, tenant, email, is: "from the second code", isNot: "from the first code")
        }
    }

    /// Two VERIFY_EMAIL codes outstanding: using one ends the other.
    @Test("a verification code is refused once another was used")
    func verificationCodeRefusedOnceAnotherWasUsed() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await Self.passwordTenant(service.directory)
            let email = InProcess.uniqueEmail("verify")
            let session = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
            let idToken = try #require(session["idToken"]?.stringValue)
            for _ in 0..<2 {
                try expectOK(
                    try await InProcessOobTests.send(
                        service, tenant, #""requestType":"VERIFY_EMAIL","idToken":"\#(idToken)""#))
            }
            let codes = try await Self.mailedCodes(service, email, 2)
            #expect(
                try expectOK(try await InProcessEmailChangeTests.apply(service, tenant, codes[0]))["emailVerified"]
                    == .bool(true))
            try expectError(try await InProcessEmailChangeTests.apply(service, tenant, codes[1]), "INVALID_OOB_CODE")
        }
    }

    /// A VERIFY_AND_CHANGE_EMAIL code sent before the address changed (the user's own accounts:update, then
    /// an admin's back to the first address, all within the minute) no longer moves the account, though the
    /// address is again the one the code was sent from; nor does one of two such codes once the other was used
    /// (and the address was put back).
    @Test("an email-change code is refused once the email changed, even back again")
    func emailChangeCodeRefusedOnceTheEmailChanged() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await Self.passwordTenant(service.directory)
            let old = InProcess.uniqueEmail("old")
            let session = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, old))
            let localId = try #require(session["localId"]?.stringValue)
            let idToken = try #require(session["idToken"]?.stringValue)

            func setEmailByAdmin(_ email: String) async throws {
                try expectOK(
                    try await InProcessAccountUpdateTests.update(
                        service, tenant, #""localId":"\#(localId)","email":"\#(email)""#))
            }
            func currentEmail() async throws -> String? {
                let users = try await service.directory.lookupUsers(tenant, [localId])
                try #require(users.count == 1, "\(users)")
                return users[0]["email"]?.stringValue
            }
            func sendChange(_ idToken: String, _ newEmail: String) async throws {
                try expectOK(
                    try await InProcessOobTests.send(
                        service, tenant,
                        #""requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(idToken)","newEmail":"\#(newEmail)""#))
            }

            let stale = InProcess.uniqueEmail("stale")
            let direct = InProcess.uniqueEmail("direct")
            try await sendChange(idToken, stale)
            let code = try #require(try await Self.mailedCodes(service, stale, 1).first)
            let updated = try expectOK(
                try await InProcessEmailChangeTests.changeEmail(service, tenant, idToken, to: direct))
            #expect(updated["email"]?.stringValue == direct)
            try await setEmailByAdmin(old)
            try expectError(try await InProcessEmailChangeTests.apply(service, tenant, code), "INVALID_OOB_CODE")
            #expect(try await currentEmail() == old)

            let signedIn = try expectOK(try await InProcessPasswordTests.signIn(service, tenant, old))
            let fresh = try #require(signedIn["idToken"]?.stringValue)
            let one = InProcess.uniqueEmail("one")
            let two = InProcess.uniqueEmail("two")
            for new in [one, two] { try await sendChange(fresh, new) }
            let codeOne = try #require(try await Self.mailedCodes(service, one, 1).first)
            let codeTwo = try #require(try await Self.mailedCodes(service, two, 1).first)
            #expect(
                try expectOK(try await InProcessEmailChangeTests.apply(service, tenant, codeTwo))["email"]?.stringValue
                    == two)
            try await setEmailByAdmin(old)
            try expectError(try await InProcessEmailChangeTests.apply(service, tenant, codeOne), "INVALID_OOB_CODE")
            #expect(try await currentEmail() == old)
        }
    }

    // MARK: 11a. One account per address, whatever its Unicode normalization; no mixed-script domains

    /// `josé@…` with é precomposed (NFC) and decomposed (e + U+0301, NFD) is the same address: the second
    /// sign-up is EMAIL_EXISTS, and either form signs in the one account; both orders.
    @Test("the NFC and NFD forms of an address are one account")
    func nfcAndNFDFormsOfAnAddressAreOneAccount() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await Self.passwordTenant(service.directory)
            let tag = Secrets.randomAlphanumeric(8).lowercased()
            let nfc = { (text: String) in text.precomposedStringWithCanonicalMapping }
            let nfd = { (text: String) in text.decomposedStringWithCanonicalMapping }
            for (firstForm, secondForm, name) in [(nfc, nfd, "nfc"), (nfd, nfc, "nfd")] {
                let base = "jos\u{E9}-\(name)-\(tag)@example.com"
                let first = firstForm(base)
                let second = secondForm(base)
                // Swift's == compares canonically: the scalars tell the forms apart.
                #expect(Array(first.unicodeScalars) != Array(second.unicodeScalars))
                let created = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, first))
                try expectError(try await InProcessPasswordTests.signUp(service, tenant, second), "EMAIL_EXISTS")
                try expectError(
                    try await Self.adminCreate(
                        service.directory, tenant, #""email":"\#(second)","password":"\#(Self.password)""#),
                    "EMAIL_EXISTS")
                #expect(
                    try expectOK(try await InProcessPasswordTests.signIn(service, tenant, second))["localId"]
                        == created["localId"])
                #expect(
                    try expectOK(try await InProcessPasswordTests.signIn(service, tenant, first))["localId"]
                        == created["localId"])
            }
        }
    }

    /// `user@pаypal.com` with a Cyrillic а (U+0430) in a Latin label is a look-alike of paypal.com:
    /// INVALID_EMAIL on sign-up and on admin create, wherever the label is, and nobody is created. A label of
    /// one script (Latin with a diacritic, all Cyrillic) is an address like any other.
    @Test("a domain label mixing scripts is INVALID_EMAIL; a label of one script is fine")
    func domainLabelMixingScriptsIsRefused() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await Self.passwordTenant(service.directory)
            for domain in ["p\u{430}ypal.com", "\u{430}pple.com", "mail.g\u{43E}ogle.com"] {
                let spoof = "user-\(Secrets.randomAlphanumeric(8).lowercased())@\(domain)"
                try expectError(try await InProcessPasswordTests.signUp(service, tenant, spoof), "INVALID_EMAIL")
                try expectError(
                    try await Self.adminCreate(
                        service.directory, tenant, #""email":"\#(spoof)","password":"\#(Self.password)""#),
                    "INVALID_EMAIL")
            }
            #expect(try await Self.batchGet(service.directory.admin, tenant).isEmpty, "nobody is created")
            for domain in ["b\u{FC}cher.example", "\u{43F}\u{440}\u{438}\u{43C}\u{435}\u{440}.\u{440}\u{444}"] {
                try expectOK(
                    try await InProcessPasswordTests.signUp(
                        service, tenant, "user-\(Secrets.randomAlphanumeric(8).lowercased())@\(domain)"))
            }
        }
    }

    // MARK: 11d. displayName and photoUrl bounded at 2,048 characters everywhere they are written

    static let long = [
        "displayName": String(repeating: "n", count: maxField + 1),
        "photoUrl": "https://example.com/" + String(repeating: "p", count: maxField + 1 - 20),
    ]
    static let atBound = [
        "displayName": String(repeating: "n", count: maxField),
        "photoUrl": "https://example.com/" + String(repeating: "p", count: maxField - 20),
    ]
    static let codes = ["displayName": "INVALID_DISPLAY_NAME", "photoUrl": "INVALID_PHOTO_URL"]
    static let short = ["displayName": "Ada", "photoUrl": "https://example.com/ada.png"]

    static func userByEmail(_ directory: Directory, _ tenant: String, _ email: String) async throws -> JSONValue? {
        let found = try expectOK(
            try await directory.admin.post(directory.accountsPath(tenant, "lookup"), #"{"email":["\#(email)"]}"#))
        return found["users"]?[0]
    }

    /// A 31 MB displayName was stored: admin `accounts` and `accounts:update` refuse a displayName or photoUrl
    /// over 2,048 characters (INVALID_DISPLAY_NAME / INVALID_PHOTO_URL) and store nothing; 2,048 is accepted.
    @Test("an overlong profile field is refused by admin create and update, nothing stored; 2,048 is accepted")
    func overlongProfileFieldsRefusedByAdminCreateAndUpdate() async throws {
        try await InProcess.withDirectory { directory in
            for field in ["displayName", "photoUrl"] {
                let tenant = try await Self.passwordTenant(directory)
                let email = InProcess.uniqueEmail("admin")
                let update = directory.accountsPath(tenant, "update")
                let (long, short, atBound, code) = try (
                    #require(Self.long[field]), #require(Self.short[field]), #require(Self.atBound[field]),
                    #require(Self.codes[field])
                )
                try expectError(
                    try await Self.adminCreate(directory, tenant, #""email":"\#(email)","\#(field)":"\#(long)""#), code)
                #expect(
                    try await Self.userByEmail(directory, tenant, email) == nil,
                    "\(field): nothing is created when refused")

                let localId = try #require(
                    try expectOK(
                        try await Self.adminCreate(directory, tenant, #""email":"\#(email)","\#(field)":"\#(short)""#)
                    )["localId"]?.stringValue)
                try expectError(
                    try await directory.admin.post(update, #"{"localId":"\#(localId)","\#(field)":"\#(long)"}"#), code)
                var users = try await directory.lookupUsers(tenant, [localId])
                try #require(users.count == 1, "\(users)")
                #expect(users[0][field]?.stringValue == short, "\(field): nothing is changed when refused")

                try expectOK(
                    try await directory.admin.post(update, #"{"localId":"\#(localId)","\#(field)":"\#(atBound)"}"#))
                users = try await directory.lookupUsers(tenant, [localId])
                try #require(users.count == 1, "\(users)")
                #expect(users[0][field]?.stringValue == atBound, "\(field)")
            }
        }
    }

    /// The end-user paths too: signUp and accounts:update (idToken) with a displayName or photoUrl over 2,048
    /// characters are refused and store nothing.
    @Test("an overlong profile field is refused by end-user sign-up and update, nothing stored")
    func overlongProfileFieldsRefusedByEndUserSignUpAndUpdate() async throws {
        try await InProcess.withTokenService { service in
            for field in ["displayName", "photoUrl"] {
                let directory = service.directory
                let tenant = try await Self.passwordTenant(directory)
                let email = InProcess.uniqueEmail("self")
                let (long, short, code) = try (
                    #require(Self.long[field]), #require(Self.short[field]), #require(Self.codes[field])
                )
                try expectError(
                    try await InProcessPasswordTests.signUp(service, tenant, email, extra: #","\#(field)":"\#(long)""#),
                    code)
                #expect(
                    try await Self.userByEmail(directory, tenant, email) == nil,
                    "\(field): nothing is created when refused")

                let session = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
                let idToken = session["idToken"]?.stringValue
                try expectOK(
                    try await InProcessAccountUpdateTests.update(service, tenant, idToken, #""\#(field)":"\#(short)""#))
                try expectError(
                    try await InProcessAccountUpdateTests.update(service, tenant, idToken, #""\#(field)":"\#(long)""#),
                    code)
                let users = try await directory.lookupUsers(tenant, [try #require(session["localId"]?.stringValue)])
                try #require(users.count == 1, "\(users)")
                #expect(users[0][field]?.stringValue == short, "\(field): nothing is changed when refused")
            }
        }
    }
}
