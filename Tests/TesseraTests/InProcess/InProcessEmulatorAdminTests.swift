import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// Issue #36's tenant selection, account and HTTP themes, ported from the Firebase emulator's specs
/// (each test names the `*.spec.ts:line` it ports); docs/design-notes.md, "Admin API" and "Where
/// Tessera differs from the emulator, on purpose".
@Suite("in-process: the emulator's specs on tenants, accounts and HTTP", .enabled(if: PostgresSupport.available))
struct InProcessEmulatorAdminTests {
    static let project = "/v1/projects/\(InProcess.projectID)"

    // MARK: tenant selection

    /// misc:471, misc:528, batch:166, batch:638: a `disableAuth` tenant's users cannot be managed,
    /// whether the tenant is named by the path or by the body on the project's path.
    @Test("a disableAuth tenant answers PROJECT_DISABLED to every admin call on its users")
    func disabledTenantRefusesUserManagement() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenant = try await directory.createTenantID(#""disableAuth":true"#)
            let body = #"{"tenantId":"\#(tenant)","localId":["x"]}"#
            for answer in [
                try await service.client.bearer(InProcess.adminToken).post("/v1/accounts:lookup", body),
                try await directory.admin.post("\(Self.project)/accounts:lookup", body),
                try await directory.admin.post("\(Self.project)/accounts:query", #"{"tenantId":"\#(tenant)"}"#),
                try await directory.admin.get("\(Self.project)/tenants/\(tenant)/accounts:batchGet"),
                try await directory.admin.post(
                    "\(Self.project)/accounts:batchCreate", #"{"tenantId":"\#(tenant)","users":[{"localId":"a"}]}"#),
                try await directory.admin.post("\(Self.project)/tenants/\(tenant)/accounts", "{}"),
                try await directory.admin.post(
                    "\(Self.project)/tenants/\(tenant)/accounts:update", #"{"localId":"x","displayName":"y"}"#),
                try await directory.admin.post(
                    "\(Self.project)/accounts:delete", #"{"tenantId":"\#(tenant)","localId":"x"}"#),
            ] {
                try expectError(answer, "PROJECT_DISABLED")
            }
            // The tenant's own settings stay reachable, so an admin can turn sign-in back on.
            let path = "/v2/projects/\(InProcess.projectID)/tenants/\(tenant)"
            try expectOK(try await directory.admin.get(path))
            try expectOK(
                try await directory.admin.request(
                    .patch, "\(path)?updateMask=disableAuth", body: #"{"disableAuth":false}"#))
            let users = try expectOK(try await directory.admin.post("\(Self.project)/accounts:lookup", body))
            #expect(users["users"] == nil)
        }
    }

    /// rest:214, rest:237 (and misc's lookup by ID token): an admin lookup by `idToken` finds that
    /// token's user, and a token of another tenant than the one the call names is a mismatch.
    @Test("an admin lookup by ID token answers TENANT_ID_MISMATCH for another tenant's token")
    func adminLookupByIDTokenChecksTheTenant() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenant = try await directory.createTenantID()
            let other = try await directory.createTenantID()
            let session = try await service.signUpAnonymous(tenant)
            let token = session.idToken
            for (path, body) in [
                ("\(Self.project)/tenants/\(other)/accounts:lookup", #"{"idToken":"\#(token)"}"#),
                ("\(Self.project)/tenants/not-matching-tenant-id/accounts:lookup", #"{"idToken":"\#(token)"}"#),
                ("\(Self.project)/accounts:lookup", #"{"idToken":"\#(token)","tenantId":"not-matching-tenant-id"}"#),
                ("\(Self.project)/accounts:lookup", #"{"idToken":"\#(token)"}"#),
            ] {
                try expectError(try await directory.admin.post(path, body), "TENANT_ID_MISMATCH")
            }
            try expectError(
                try await service.client.bearer(InProcess.adminToken).post(
                    "/v1/accounts:lookup", #"{"idToken":"\#(token)","tenantId":"\#(other)"}"#),
                "TENANT_ID_MISMATCH")
            for (path, body) in [
                ("\(Self.project)/tenants/\(tenant)/accounts:lookup", #"{"idToken":"\#(token)"}"#),
                ("\(Self.project)/accounts:lookup", #"{"idToken":"\#(token)","tenantId":"\#(tenant)"}"#),
            ] {
                let found = try expectOK(try await directory.admin.post(path, body))
                #expect(found["users"]?[0]?["localId"]?.stringValue == session.localId, "\(found)")
            }
            try expectError(
                try await directory.admin.post(
                    "\(Self.project)/tenants/\(tenant)/accounts:lookup", #"{"idToken":"not-a-token"}"#),
                "INVALID_ID_TOKEN")
        }
    }

    // MARK: accounts

    /// signUp:360: an end user cannot choose its id.
    @Test("an end user's signUp with a localId answers UNEXPECTED_PARAMETER : User ID")
    func endUserSignUpCannotChooseItsID() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let answer = try await service.client.post(
                "/v1/accounts:signUp", #"{"tenantId":"\#(tenant)","localId":"anything"}"#)
            try expectError(answer, "UNEXPECTED_PARAMETER")
            #expect(answer.json?["error"]?["message"]?.stringValue == "UNEXPECTED_PARAMETER : User ID")
        }
    }

    /// password:96: an address that is malformed or empty is INVALID_EMAIL.
    @Test("signInWithPassword answers INVALID_EMAIL to a malformed or empty address")
    func signInWithAMalformedAddress() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            for email in ["ill-formatted-email", ""] {
                try expectError(
                    try await service.client.post(
                        "/v1/accounts:signInWithPassword",
                        #"{"tenantId":"\#(tenant)","email":"\#(email)","password":"notasecret"}"#),
                    "INVALID_EMAIL")
            }
        }
    }

    /// setAccountInfo:1021: `validSince` in an end user's update revokes the older tokens and answers
    /// fresh ones.
    @Test("an end user's validSince answers fresh tokens and revokes the older ones")
    func endUserValidSinceAnswersFreshTokens() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let session = try expectOK(
                try await InProcessPasswordTests.signUp(service, tenant, InProcess.uniqueEmail()))
            let token = session["idToken"]?.stringValue
            let answer = try expectOK(
                try await InProcessAccountUpdateTests.update(service, tenant, token, #""validSince":"0""#))
            let fresh = try #require(answer["idToken"]?.stringValue, "\(answer)")
            #expect(answer["refreshToken"]?.stringValue?.isEmpty == false)
            try expectError(try await service.lookup(token, tenant: tenant), "TOKEN_EXPIRED")
            try expectError(try await service.refreshRaw(session["refreshToken"]?.stringValue), "TOKEN_EXPIRED")
            try expectOK(try await service.lookup(fresh, tenant: tenant))
        }
    }

    /// setAccountInfo:1065: a user may remove its password even when it is the only way to sign in.
    @Test("deleteProvider removes the last provider, and createAuthUri no longer lists it")
    func theLastProviderCanBeRemoved() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let email = InProcess.uniqueEmail()
            let session = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
            let answer = try expectOK(
                try await InProcessAccountUpdateTests.update(
                    service, tenant, session["idToken"]?.stringValue, #""deleteProvider":["password"]"#))
            #expect(answer["providerUserInfo"]?.arrayValue?.isEmpty ?? true, "\(answer)")
            let methods = try expectOK(
                try await service.client.post(
                    "/v1/accounts:createAuthUri",
                    #"{"tenantId":"\#(tenant)","identifier":"\#(email)","continueUri":"http://localhost/"}"#))
            #expect(methods["signinMethods"] == nil || methods["signinMethods"] == .array([]), "\(methods)")
            try expectError(
                try await InProcessPasswordTests.signIn(service, tenant, email),
                "INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD", "EMAIL_NOT_FOUND")
        }
    }

    /// setAccountInfo:1258, 1295, 1330: `linkProviderUserInfo` needs an admin (production: an OAuth
    /// credential); an end user's is refused, since it would let anyone claim a provider identity.
    @Test("an admin links a provider identity with linkProviderUserInfo; an end user may not")
    func linkProviderUserInfo() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenant = try await directory.createTenantID(#""allowPasswordSignup":true"#)
            let session = try expectOK(
                try await InProcessPasswordTests.signUp(service, tenant, InProcess.uniqueEmail()))
            let localID = try #require(session["localId"]?.stringValue)
            let info =
                #"{"providerId":"google.com","rawId":"google_user_id","email":"linked@example.com","displayName":"Linked User","photoUrl":"https://example.com/photo.jpg"}"#
            try expectError(
                try await InProcessAccountUpdateTests.update(
                    service, tenant, session["idToken"]?.stringValue, #""linkProviderUserInfo":\#(info)"#),
                "INSUFFICIENT_PERMISSION")

            let linked = try expectOK(
                try await InProcessAccountUpdateTests.update(
                    service, tenant, #""localId":"\#(localID)","linkProviderUserInfo":\#(info)"#))
            let providers = try #require(linked["providerUserInfo"]?.arrayValue, "\(linked)")
            #expect(providers.count == 2)
            let google = try #require(providers.first { $0["providerId"]?.stringValue == "google.com" })
            #expect(google["rawId"]?.stringValue == "google_user_id")
            #expect(google["email"]?.stringValue == "linked@example.com")
            #expect(google["displayName"]?.stringValue == "Linked User")
            #expect(google["photoUrl"]?.stringValue == "https://example.com/photo.jpg")
            let stored = try #require(try await directory.lookupUsers(tenant, [localID]).first)
            #expect(stored["providerUserInfo"]?.arrayValue?.count == 2)

            for (member, code) in [
                (#"{"providerId":"google.com","email":"linked@example.com"}"#, "MISSING_RAW_ID"),
                (#"{"rawId":"google_user_id","email":"linked@example.com"}"#, "MISSING_PROVIDER_ID"),
                (#"{"providerId":"password","rawId":"x"}"#, "INVALID_PROVIDER_ID"),
            ] {
                try expectError(
                    try await InProcessAccountUpdateTests.update(
                        service, tenant, #""localId":"\#(localID)","linkProviderUserInfo":\#(member)"#),
                    code)
            }
            // The identity belongs to one user: another's link of it is refused, and changes nothing.
            let other = try await service.signUpAnonymous(tenant)
            try expectError(
                try await InProcessAccountUpdateTests.update(
                    service, tenant, #""localId":"\#(other.localId)","linkProviderUserInfo":\#(info)"#),
                "FEDERATED_USER_ID_ALREADY_LINKED")
            #expect(try await directory.lookupUsers(tenant, [other.localId]).first?["providerUserInfo"] == nil)

            // A disabled user's own call is USER_DISABLED; an admin still links for them.
            try expectOK(
                try await InProcessAccountUpdateTests.update(
                    service, tenant, #""localId":"\#(localID)","disableUser":true"#))
            try expectError(
                try await InProcessAccountUpdateTests.update(
                    service, tenant, session["idToken"]?.stringValue, #""linkProviderUserInfo":\#(info)"#),
                "USER_DISABLED")
        }
    }

    /// setAccountInfo:980: `mfa.enrollments` must be an array when present.
    @Test("an update's mfa.enrollments that is not an array is an invalid payload")
    func mfaEnrollmentsMustBeAnArray() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenantID()
            let answer = try await directory.admin.post(
                directory.accountsPath(tenant, "update"), #"{"localId":"anything","mfa":{"enrollments":null}}"#)
            let error = try expectStatusError(answer, .badRequest, "INVALID_ARGUMENT")
            #expect(error["message"]?.stringValue?.contains("enrollments") == true, "\(answer)")
        }
    }

    /// batch:353, batch:372: with `sanityCheck`, one provider identity twice in a payload refuses the
    /// whole request; an identity another account holds is that user's error, with or without it.
    @Test("batchCreate's sanity checks of provider identities")
    func batchCreateSanityChecks() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenantID()
            let create = directory.accountsPath(tenant, "batchCreate")
            let duplicate = try await directory.admin.post(
                create,
                #"{"sanityCheck":true,"users":[{"localId":"test1","providerUserInfo":[{"providerId":"google.com","rawId":"dup"}]},{"localId":"test2","providerUserInfo":[{"providerId":"google.com","rawId":"dup"}]}]}"#
            )
            try expectError(duplicate, "DUPLICATE_RAW_ID")
            #expect(
                duplicate.json?["error"]?["message"]?.stringValue
                    == "DUPLICATE_RAW_ID : Provider id(google.com), Raw id(dup)")
            #expect(try await directory.lookupUsers(tenant, ["test1", "test2"]).isEmpty)

            try expectOK(
                try await directory.admin.post(
                    create,
                    #"{"users":[{"localId":"holder","providerUserInfo":[{"providerId":"google.com","rawId":"0123456"}]}]}"#
                ))
            for sanity in ["true", "false"] {
                let answer = try expectOK(
                    try await directory.admin.post(
                        create,
                        #"{"sanityCheck":\#(sanity),"users":[{"localId":"test1","providerUserInfo":[{"providerId":"google.com","rawId":"0123456"}]}]}"#
                    ))
                #expect(
                    answer["error"]
                        == .array([
                            .object([
                                "index": .int(0), "message": .string("raw id exists in other account in database"),
                            ])
                        ]), "\(answer)")
            }
            #expect(try await directory.lookupUsers(tenant, ["test1"]).isEmpty)
        }
    }

    /// batch:528 (and its neighbour "should block duplicate localIds by default"): an existing
    /// localId is refused unless `allowOverwrite`, which replaces the account.
    @Test("batchCreate overwrites an existing account only with allowOverwrite")
    func batchCreateAllowOverwrite() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenantID()
            let create = directory.accountsPath(tenant, "batchCreate")
            try expectOK(
                try await directory.admin.post(
                    create,
                    #"{"users":[{"localId":"old","email":"bar@example.com","displayName":"Old Display Name","providerUserInfo":[{"providerId":"google.com","rawId":"doh"}]}]}"#
                ))
            let replacement = #"{"localId":"old","email":"foo@example.com","rawPassword":"notasecret"}"#
            let refused = try expectOK(try await directory.admin.post(create, #"{"users":[\#(replacement)]}"#))
            #expect(
                refused["error"]?[0]?["message"]?.stringValue
                    == "localId belongs to an existing account - can not overwrite.", "\(refused)")
            try expectError(
                try await directory.admin.post(create, #"{"users":[\#(replacement),\#(replacement)]}"#),
                "DUPLICATE_LOCAL_ID")

            let answer = try expectOK(
                try await directory.admin.post(create, #"{"allowOverwrite":true,"users":[\#(replacement)]}"#))
            #expect(answer["error"] == nil || answer["error"] == .array([]), "\(answer)")
            let user = try #require(try await directory.lookupUsers(tenant, ["old"]).first)
            #expect(user["email"]?.stringValue == "foo@example.com")
            #expect(user["displayName"] == nil)
            #expect(
                user["providerUserInfo"]?.arrayValue?.map { $0["providerId"]?.stringValue } == ["password"], "\(user)")
        }
    }

    /// batch:779 and its neighbour: between 1 and 1000 ids.
    @Test("batchDelete takes 1 to 1000 ids, else LOCAL_ID_LIST_EXCEEDS_LIMIT")
    func batchDeleteLimits() async throws {
        try await InProcess.withDirectory { directory in
            let path = directory.accountsPath(nil, "batchDelete")
            let ids = (0..<1001).map { "localId-\($0)" }
            try expectError(
                try await directory.admin.post(path, #"{"localIds":[],"force":true}"#), "LOCAL_ID_LIST_EXCEEDS_LIMIT")
            try expectError(
                try await directory.admin.post(path, #"{"localIds":\#(json(ids)),"force":true}"#),
                "LOCAL_ID_LIST_EXCEEDS_LIMIT")
            let answer = try expectOK(
                try await directory.admin.post(path, #"{"localIds":\#(json(Array(ids.prefix(1000)))),"force":true}"#))
            #expect(answer["errors"] == nil, "\(answer)")
        }
    }

    // MARK: HTTP

    /// rest:15: a preflight is answered with the headers it asks for.
    @Test("a CORS preflight reflects the origin and the requested headers")
    func corsPreflightReflectsRequestedHeaders() async throws {
        try await InProcess.withTokenService { service in
            let answer = try await service.client.key(nil).request(
                .options, "/v1/accounts:signUp",
                body: nil,
                headers: [
                    .origin: "https://app.example.com", .accessControlRequestMethod: "POST",
                    .accessControlRequestHeaders: "Authorization,X-Client-Version,X-Whatever-Header",
                ])
            #expect(answer.status == .noContent, "\(answer)")
            #expect(answer.headers[.accessControlAllowOrigin] == "https://app.example.com")
            let allowed = Set(
                (answer.headers[.accessControlAllowHeaders] ?? "").split(separator: ",").map {
                    $0.trimmingCharacters(in: .whitespaces).lowercased()
                })
            #expect(allowed.isSuperset(of: ["authorization", "x-client-version", "x-whatever-header"]), "\(allowed)")
            #expect(answer.headers[values: .vary].joined(separator: ",").contains("Access-Control-Request-Headers"))
        }
    }

    /// rest:53 (and rest:40): the privileged v3 getOobConfirmationCode, with the Android SDK's integer
    /// request type, answers the link.
    @Test("an admin's v3 getOobConfirmationCode with an integer requestType answers the link")
    func legacyPrivilegedOobCode() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""enableEmailLinkSignin":true"#)
            let admin = service.client.key(nil).bearer(InProcess.adminToken)
            for path in [
                "/www.googleapis.com/identitytoolkit/v3/relyingparty/getOobConfirmationCode",
                "/v1/accounts:sendOobCode",
            ] {
                let answer = try expectOK(
                    try await admin.post(
                        path,
                        #"{"email":"bob@example.com","requestType":6,"returnOobLink":true,"tenantId":"\#(tenant)"}"#))
                #expect(answer["oobLink"]?.stringValue?.contains("mode=signIn") == true, "\(answer)")
            }
        }
    }

    /// rest:183: `targetProjectId` needs an admin; an API key is not enough.
    @Test("targetProjectId with only an API key is INSUFFICIENT_PERMISSION")
    func targetProjectIDNeedsAnAdmin() async throws {
        try await InProcess.withTokenService { service in
            let answer = try await service.client.post("/v1/accounts:signUp", #"{"targetProjectId":"example2"}"#)
            try expectError(answer, "INSUFFICIENT_PERMISSION")
            #expect(
                answer.json?["error"]?["message"]?.stringValue
                    == "INSUFFICIENT_PERMISSION : Only authenticated requests can specify target_project_id.")
        }
    }
}
