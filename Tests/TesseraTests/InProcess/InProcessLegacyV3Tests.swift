import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// The legacy Gitkit v3 API (docs/protocol/README.md#the-surface, docs/protocol/accounts.md#legacy-v3-paths):
/// every rpc of the table is served by its v1 operation with and without the Google host prefix; the admin
/// export and import with `targetProjectId`; the project config and the session-cookie keys; what the v2
/// reCAPTCHA, password-policy and token-revocation calls answer; re-authentication (`autoCreate: false`)
/// never creating a user. Formerly Tests/stack/test_legacy_v3.py, which keeps only what the ingress does
/// (the admin rpcs are not on the public plane); the SDKs' call sequences are in test_sdk_conformance.py.
@Suite("in-process: the legacy v3 API", .enabled(if: PostgresSupport.available))
struct InProcessLegacyV3Tests {
    static let prefixes = ["/www.googleapis.com/identitytoolkit/v3/relyingparty", "/identitytoolkit/v3/relyingparty"]

    /// rpc → an error its v1 operation answers an empty request with (so the call reached that handler).
    static let emptyRequestErrors = [
        "signupNewUser": "ADMIN_ONLY_OPERATION",  // anonymous sign-up, off in the test tenant
        "verifyPassword": "MISSING_EMAIL",
        "getAccountInfo": "MISSING_ID_TOKEN",
        "setAccountInfo": "MISSING_ID_TOKEN",
        "deleteAccount": "MISSING_ID_TOKEN",
        "verifyAssertion": "MISSING_REQUEST_URI",
        "verifyCustomToken": "MISSING_CUSTOM_TOKEN",
        "getOobConfirmationCode": "MISSING_REQ_TYPE",
        "resetPassword": "MISSING_OOB_CODE",
        "createAuthUri": "MISSING_IDENTIFIER",
        "emailLinkSignin": "MISSING_EMAIL",
    ]

    /// A v3 call as the stack test sent it: always with a JSON content type, with the API key unless
    /// `key` is false, with `bearer` as the admin credential when given.
    static func v3(
        _ service: TokenHarness, _ rpc: String, _ body: String? = nil, prefix: String = prefixes[0],
        method: HTTPRequest.Method = .post, bearer: String? = nil, key: Bool = true
    ) async throws -> Answer {
        let caller = (key ? service.client : service.client.key(nil)).bearer(bearer)
        return try await caller.request(
            method, "\(prefix)/\(rpc)", body: body, headers: [.contentType: "application/json"])
    }

    @Test("every v3 rpc reaches its v1 operation on both prefixes, and needs the API key")
    func everyRPCReachesItsOperation() async throws {
        try await InProcess.withTokenService { service in
            for (rpc, code) in Self.emptyRequestErrors.sorted(by: { $0.key < $1.key }) {
                for prefix in Self.prefixes {
                    // Password and email-link sign-in on: a method switched off is answered before the
                    // missing fields (issue 36), which would hide them.
                    let tenant = try await service.directory.createTenantID(
                        #""enableAnonymousUser":false,"allowPasswordSignup":true,"enableEmailLinkSignin":true"#)
                    let body = #"{"tenantId":"\#(tenant)"}"#
                    try expectError(try await Self.v3(service, rpc, body, prefix: prefix), code)
                    // The API key is checked as on v1.
                    try expectStatusError(
                        try await Self.v3(service, rpc, body, prefix: prefix, key: false), .forbidden,
                        "PERMISSION_DENIED")
                }
            }
        }
    }

    @Test("a user made over v3 signs in over v1, and v3 sign-up then finds the address taken")
    func v3AndV1ShareBehaviour() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let email = "v3-\(Secrets.randomAlphanumeric(12).lowercased())@example.com"
            let created = try expectOK(
                try await Self.v3(
                    service, "signupNewUser",
                    #"{"email":"\#(email)","password":"secret pass","tenantId":"\#(tenant)","returnSecureToken":true,"clientType":"CLIENT_TYPE_IOS"}"#
                ))
            #expect(
                created["kind"]?.stringValue == "identitytoolkit#SignupNewUserResponse"
                    && created["expiresIn"]?.stringValue == "3600", "\(created)")
            let signedIn = try expectOK(
                try await service.client.post(
                    "/v1/accounts:signInWithPassword",
                    #"{"tenantId":"\#(tenant)","email":"\#(email)","password":"secret pass"}"#))
            #expect(signedIn["localId"] == created["localId"])
            try expectError(
                try await Self.v3(
                    service, "signupNewUser",
                    #"{"email":"\#(email)","password":"secret pass","tenantId":"\#(tenant)"}"#),
                "EMAIL_EXISTS")
        }
    }

    @Test("out-of-scope v3 rpcs answer 501 with their name, unknown ones 404, a POST rpc is no GET rpc")
    func outOfScopeAndUnknownRPCs() async throws {
        try await InProcess.withTokenService { service in
            let outOfScope = [
                "signOutUser", "verifyClient", "signInWithGameCenter", "setProjectConfig",
            ]
            for rpc in outOfScope {
                for method in [HTTPRequest.Method.post, .get] {
                    let answer = try await Self.v3(service, rpc, method == .post ? "{}" : nil, method: method)
                    let error = try expectStatusError(answer, .notImplemented, "NOT_IMPLEMENTED")
                    #expect(
                        error["message"]?.stringValue == "NOT_IMPLEMENTED : \(rpc) is not implemented in Tessera.",
                        "\(answer)")
                }
            }
            try expectStatusError(try await Self.v3(service, "noSuchRpc", "{}"), .notFound, "NOT_FOUND")
            // An rpc served by POST is not served by GET.
            let answer = try await Self.v3(service, "signupNewUser", method: .get)
            #expect([404, 405].contains(answer.status.code), "\(answer)")
        }
    }

    @Test("getProjectConfig on both prefixes and GET /v1/projects name the project and its authorized domains")
    func getProjectConfig() async throws {
        try await InProcess.withTokenService { service in
            for prefix in Self.prefixes {
                let data = try expectOK(try await Self.v3(service, "getProjectConfig", prefix: prefix, method: .get))
                #expect(data["projectId"]?.stringValue?.isEmpty == false, "\(data)")
                #expect(data["authorizedDomains"]?.arrayValue?.contains(.string("localhost")) == true, "\(data)")
            }
            let data = try expectOK(try await service.client.get("/identitytoolkit.googleapis.com/v1/projects"))
            #expect(data["authorizedDomains"]?.arrayValue?.contains(.string("localhost")) == true, "\(data)")
        }
    }

    @Test("v3 publicKeys on both prefixes are the session-cookie certificates, by kid")
    func publicKeysAreTheSessionCookieCertificates() async throws {
        try await InProcess.withTokenService { service in
            let jwks = try expectOK(try await service.client.key(nil).get("/v1/sessionCookiePublicKeys"))
            let kids = Set((jwks["keys"]?.arrayValue ?? []).compactMap { $0["kid"]?.stringValue })
            for prefix in Self.prefixes {
                let data = try expectOK(
                    try await Self.v3(service, "publicKeys", prefix: prefix, method: .get, key: false))
                let pems = try #require(data.objectValue)
                #expect(!pems.isEmpty)
                for (kid, pem) in pems {
                    #expect(pem.stringValue?.hasPrefix("-----BEGIN CERTIFICATE-----") == true, "\(kid): \(pem)")
                }
                #expect(kids == Set(pems.keys), "\(jwks) / \(data)")
            }
        }
    }

    @Test("downloadAccount and uploadAccount need an admin credential and targetProjectId, and page")
    func downloadAndUploadAccountNeedAnAdminAndNameTheProject() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let p = InProcess.projectID
            let owner = InProcess.adminToken
            let uploaded = try expectOK(
                try await Self.v3(
                    service, "uploadAccount",
                    #"{"targetProjectId":"\#(p)","tenantId":"\#(tenant)","users":[{"localId":"v3-user-1","email":"v3-one@example.com"},{"localId":"v3-user-2","email":"v3-two@example.com"}]}"#,
                    bearer: owner, key: false))
            #expect(
                uploaded["kind"]?.stringValue == "identitytoolkit#UploadAccountResponse" && uploaded["error"] == nil,
                "\(uploaded)")
            let page = try expectOK(
                try await Self.v3(
                    service, "downloadAccount", #"{"targetProjectId":"\#(p)","tenantId":"\#(tenant)","maxResults":1}"#,
                    bearer: owner, key: false))
            #expect((page["users"]?.arrayValue ?? []).map { $0["localId"]?.stringValue } == ["v3-user-1"], "\(page)")
            let token = try #require(page["nextPageToken"]?.stringValue, "\(page)")
            #expect(!token.isEmpty)
            let rest = try expectOK(
                try await Self.v3(
                    service, "downloadAccount",
                    #"{"targetProjectId":"\#(p)","tenantId":"\#(tenant)","maxResults":10,"nextPageToken":"\#(token)"}"#,
                    bearer: owner, key: false))
            #expect((rest["users"]?.arrayValue ?? []).map { $0["localId"]?.stringValue } == ["v3-user-2"], "\(rest)")
            // Without an admin credential, or without a project, it is refused
            // (docs/protocol/README.md#transport-conventions, docs/protocol/accounts.md#legacy-v3-paths).
            for body in [#"{"targetProjectId":"\#(p)","tenantId":"\#(tenant)"}"#, #"{"tenantId":"\#(tenant)"}"#] {
                try expectError(try await Self.v3(service, "downloadAccount", body), "INSUFFICIENT_PERMISSION")
            }
            try expectError(
                try await Self.v3(service, "uploadAccount", #"{"tenantId":"\#(tenant)"}"#, bearer: owner, key: false),
                "INSUFFICIENT_PERMISSION")
            // A wrong admin credential is the directory's 401, as on the v1 admin paths.
            let answer = try await Self.v3(
                service, "downloadAccount", #"{"targetProjectId":"\#(p)"}"#, bearer: "not-a-credential", key: false)
            try expectStatusError(answer, .unauthorized, "UNAUTHENTICATED")
        }
    }

    @Test("the v2 reCAPTCHA config and password policy are off, and revokeToken checks the ID token")
    func v2CallsAnswerAProjectWithoutRecaptchaOrPasswordPolicy() async throws {
        try await InProcess.withTokenService { service in
            let base = "/identitytoolkit.googleapis.com/v2"
            let config = try expectOK(
                try await service.client.get(
                    "\(base)/recaptchaConfig?clientType=CLIENT_TYPE_WEB&version=RECAPTCHA_ENTERPRISE",
                    headers: [.contentType: "application/json"]))
            var states: [String: String] = [:]
            for state in config["recaptchaEnforcementState"]?.arrayValue ?? [] {
                states[state["provider"]?.stringValue ?? "?"] = state["enforcementState"]?.stringValue
            }
            #expect(states == ["EMAIL_PASSWORD_PROVIDER": "OFF", "PHONE_PROVIDER": "OFF"], "\(config)")
            // The JS SDK refuses a config without a key of four path segments (its site key is the fourth).
            #expect(
                config["recaptchaKey"]?.stringValue?.components(separatedBy: "/").count == 4, "\(config)")
            let policy = try expectOK(try await service.client.get("\(base)/passwordPolicy"))
            #expect(policy["schemaVersion"]?.intValue == 1 && policy["enforcementState"]?.stringValue == "OFF")
            #expect(
                policy["customStrengthOptions"]
                    == .object(["minPasswordLength": .int(6), "maxPasswordLength": .int(4096)]),
                "\(policy)")
            try expectStatusError(
                try await service.client.key(nil).get("\(base)/passwordPolicy"), .forbidden, "PERMISSION_DENIED")

            try expectError(
                try await service.client.post(
                    "\(base)/accounts:revokeToken",
                    #"{"providerId":"apple.com","tokenType":"3","token":"auth-code","idToken":"not-a-token"}"#),
                "INVALID_ID_TOKEN")
        }
    }

    @Test("revokeToken with a valid ID token answers {}; without a token MISSING_TOKEN")
    func revokeTokenChecksTheIDTokenAndSucceeds() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let session = try await service.signUpAnonymous(tenant)
            let path = "/identitytoolkit.googleapis.com/v2/accounts:revokeToken"
            func body(token: String) -> String {
                #"{"providerId":"apple.com","tokenType":"3","token":"\#(token)","idToken":"\#(session.idToken)","tenantId":"\#(tenant)"}"#
            }
            #expect(try expectOK(try await service.client.post(path, body(token: "auth-code"))) == .object([:]))
            try expectError(try await service.client.post(path, body(token: "")), "MISSING_TOKEN")
        }
    }

    /// Apple and JS send `autoCreate: false` to re-authenticate.
    @Test("v3 verifyAssertion with autoCreate false refuses an unknown identity, makes no user, signs a known one in")
    func reauthenticationNeverCreatesAUser() async throws {
        try await FakeGoogle.withTokenService { service in
            let tenant = try await service.federatedTenant(["google.com"], fields: "")
            let sub = "reauth-\(Secrets.randomAlphanumeric(12).lowercased())"
            let token = try FakeGoogle.idToken(
                sub: sub, ["email": .string("\(sub)@gmail.com"), "email_verified": .bool(true)])
            let body = #"""
                {"requestUri":"http://localhost","postBody":"id_token=\#(token)&providerId=google.com",
                 "returnSecureToken":true,"returnIdpCredential":true,"autoCreate":false,"tenantId":"\#(tenant)"}
                """#
            try expectError(try await Self.v3(service, "verifyAssertion", body), "USER_NOT_FOUND")
            let users = try expectOK(
                try await service.directory.admin.get(
                    "/v1/projects/\(InProcess.projectID)/tenants/\(tenant)/accounts:batchGet"))
            #expect((users["users"]?.arrayValue ?? []).isEmpty, "\(users)")
            try expectOK(
                try await service.signInWithIdp(
                    tenant, [("providerId", "google.com"), ("id_token", token)], returnIdpCredential: true))
            let again = try expectOK(try await Self.v3(service, "verifyAssertion", body))
            #expect(again["providerId"]?.stringValue == "google.com", "\(again)")
            #expect(again["idToken"]?.stringValue?.isEmpty == false && again["isNewUser"] != nil, "\(again)")
        }
    }

    /// docs/protocol/sdks.md#what-the-sdks-depend-on: the Apple SDK reads `federatedId` as a provider entry's uid.
    @Test("an imported provider entry without a federatedId answers its raw id there")
    func everyProviderEntryHasAFederatedID() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenantID()
            let imported = try expectOK(
                try await directory.admin.post(
                    directory.accountsPath(tenant, "batchCreate"),
                    #"{"users":[{"localId":"imported-fed","email":"imported-fed@example.com","providerUserInfo":[{"providerId":"github.com","rawId":"gh-1234"}]}]}"#
                ))
            #expect(imported["error"] == nil, "\(imported)")
            let users = try await directory.lookupUsers(tenant, ["imported-fed"])
            try #require(users.count == 1, "\(users)")
            #expect(
                users[0]["providerUserInfo"]
                    == .array([
                        .object([
                            "providerId": .string("github.com"), "rawId": .string("gh-1234"),
                            "federatedId": .string("gh-1234"),
                        ])
                    ]), "\(users[0])")
        }
    }
}
