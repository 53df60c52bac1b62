import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// Email/password sign-up and sign-in, and email enumeration protection (docs/protocol/accounts.md#passwords,
/// #adding-email-and-password, #email-enumeration-protection; Tests/stack/test_passwords.py).
@Suite("in-process: email/password accounts", .enabled(if: PostgresSupport.available))
struct InProcessPasswordTests {
    static let password = "correct horse 1"

    static func signUp(
        _ service: TokenHarness, _ tenant: String, _ email: String, password: String = password, extra: String = ""
    ) async throws -> Answer {
        try await service.client.post(
            "/v1/accounts:signUp",
            #"{"tenantId":"\#(tenant)","email":"\#(email)","password":"\#(password)","returnSecureToken":true\#(extra)}"#
        )
    }

    static func signIn(
        _ service: TokenHarness, _ tenant: String, _ email: String, password: String = password
    ) async throws -> Answer {
        try await service.client.post(
            "/v1/accounts:signInWithPassword",
            #"{"tenantId":"\#(tenant)","email":"\#(email)","password":"\#(password)","returnSecureToken":true}"#)
    }

    @Test("sign-up and sign-in issue password tokens, and lookup shows a redacted hash")
    func signUpAndSignInIssuePasswordTokens() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let email = InProcess.uniqueEmail()
            let data = try expectOK(try await Self.signUp(service, tenant, email, extra: #","displayName":"Ada""#))
            #expect(data["kind"]?.stringValue == Kind.signUp)
            #expect(data["email"]?.stringValue == email && data["expiresIn"]?.stringValue == "3600")
            let claims = try service.verify(data["idToken"]?.stringValue)
            #expect(claims["email"]?.stringValue == email && claims["email_verified"]?.boolValue == false)
            #expect(claims["firebase"]?["sign_in_provider"]?.stringValue == "password")
            #expect(claims["firebase"]?["identities"] == .object(["email": .array([.string(email)])]))
            #expect(claims["firebase"]?["tenant"]?.stringValue == tenant)
            #expect(claims["provider_id"] == nil)
            #expect(claims["name"]?.stringValue == "Ada")

            let signedIn = try expectOK(try await Self.signIn(service, tenant, email))
            #expect(signedIn["kind"]?.stringValue == Kind.signInWithPassword)
            #expect(signedIn["registered"]?.boolValue == true && signedIn["localId"] == data["localId"])
            #expect(signedIn["email"]?.stringValue == email && signedIn["displayName"]?.stringValue == "Ada")
            #expect(try service.verify(signedIn["idToken"]?.stringValue)["sub"] == data["localId"])
            #expect(signedIn["refreshToken"] != data["refreshToken"])

            let user = try #require(
                try expectOK(try await service.lookup(signedIn["idToken"]?.stringValue, tenant: tenant))["users"]?[0])
            #expect(user["email"]?.stringValue == email && user["emailVerified"]?.boolValue == false)
            #expect(user["passwordHash"]?.stringValue == "UkVEQUNURUQ=", "clients never see a real hash")
            #expect(user["passwordUpdatedAt"]?.intValue != nil)
            #expect(
                (user["providerUserInfo"]?.arrayValue ?? []).compactMap { $0["providerId"]?.stringValue } == [
                    "password"
                ])
            #expect(user["providerUserInfo"]?[0]?["rawId"]?.stringValue == email)
        }
    }

    @Test("emails are case-insensitive for sign-up, sign-in and uniqueness")
    func emailsAreCaseInsensitive() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let local = "Mixed-\(Secrets.randomAlphanumeric(8))"
            let data = try expectOK(try await Self.signUp(service, tenant, "\(local)@Example.COM"))
            #expect(data["email"]?.stringValue == "\(local.lowercased())@example.com")
            try expectOK(try await Self.signIn(service, tenant, "\(local.uppercased())@EXAMPLE.com"))
            try expectError(try await Self.signUp(service, tenant, "\(local.lowercased())@example.com"), "EMAIL_EXISTS")
        }
    }

    @Test("sign-up refuses bad requests and respects the tenant's switches")
    func signUpRequestErrors() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let cases: [(String, String)] = [
                (#""password":"\#(Self.password)""#, "MISSING_EMAIL"),
                (#""email":"\#(InProcess.uniqueEmail())""#, "MISSING_PASSWORD"),
                (#""email":"","password":"""#, "INVALID_EMAIL"),
                (#""email":"not-an-email","password":"\#(Self.password)""#, "INVALID_EMAIL"),
                (#""email":"\#(InProcess.uniqueEmail())","password":"12345""#, "WEAK_PASSWORD"),
                (
                    #""email":"\#(InProcess.uniqueEmail())","password":"\#(String(repeating: "x", count: 4097))""#,
                    "WEAK_PASSWORD"
                ),
                (
                    #""email":"\#(InProcess.uniqueEmail())","password":"\#(Self.password)","localId":"chosen""#,
                    "UNEXPECTED_PARAMETER"
                ),
            ]
            for (fields, code) in cases {
                try expectError(
                    try await service.client.post("/v1/accounts:signUp", #"{"tenantId":"\#(tenant)",\#(fields)}"#), code
                )
            }
            let weak = try await service.client.post(
                "/v1/accounts:signUp",
                #"{"tenantId":"\#(tenant)","email":"\#(InProcess.uniqueEmail())","password":"123"}"#)
            #expect(weak.json?["error"]?["message"]?.stringValue?.contains("at least 6 characters") == true, "\(weak)")

            let closed = try await service.directory.createTenantID(#""allowPasswordSignup":false"#)
            try expectError(try await Self.signUp(service, closed, InProcess.uniqueEmail()), "OPERATION_NOT_ALLOWED")
            try expectError(try await Self.signIn(service, closed, InProcess.uniqueEmail()), "PASSWORD_LOGIN_DISABLED")
            let adminOnly = try await service.directory.createTenantID(
                #""allowPasswordSignup":true,"client":{"permissions":{"disabledUserSignup":true}}"#)
            try expectError(try await Self.signUp(service, adminOnly, InProcess.uniqueEmail()), "ADMIN_ONLY_OPERATION")
        }
    }

    @Test("under email enumeration protection (the default) a wrong password and an unknown email look alike")
    func protectionHidesWhichCredentialWasWrong() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let email = InProcess.uniqueEmail()
            try expectOK(try await Self.signUp(service, tenant, email))
            try expectError(
                try await Self.signIn(service, tenant, email, password: "wrong password"), "INVALID_LOGIN_CREDENTIALS")
            try expectError(
                try await Self.signIn(service, tenant, InProcess.uniqueEmail()), "INVALID_LOGIN_CREDENTIALS")
            let uri = try expectOK(
                try await service.client.post(
                    "/v1/accounts:createAuthUri",
                    #"{"tenantId":"\#(tenant)","identifier":"\#(email)","continueUri":"https://app.example/"}"#))
            #expect(Set((uri.objectValue ?? [:]).keys) == ["kind", "sessionId"], "\(uri)")
        }
    }

    @Test("without protection, sign-in errors and createAuthUri say which part was wrong")
    func withoutProtectionErrorsSayMore() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            // The schema is this test's own: no need to restore the project config afterwards.
            try expectOK(
                try await service.directory.admin.request(
                    .patch,
                    "/v2/projects/\(InProcess.projectID)/config?updateMask=emailPrivacyConfig.enableImprovedEmailPrivacy",
                    body: #"{"emailPrivacyConfig":{"enableImprovedEmailPrivacy":false}}"#))
            let email = InProcess.uniqueEmail()
            try expectOK(try await Self.signUp(service, tenant, email))
            try expectError(
                try await Self.signIn(service, tenant, email, password: "wrong password"), "INVALID_PASSWORD")
            try expectError(try await Self.signIn(service, tenant, InProcess.uniqueEmail()), "EMAIL_NOT_FOUND")
            let known = try expectOK(
                try await service.client.post(
                    "/v1/accounts:createAuthUri",
                    #"{"tenantId":"\#(tenant)","identifier":"\#(email.uppercased())","continueUri":"https://app.example/"}"#
                ))
            #expect(known["registered"]?.boolValue == true)
            #expect(known["signinMethods"] == .array([.string("password")]))
            #expect(known["allProviders"] == .array([.string("password")]))
            #expect(known["sessionId"]?.stringValue?.isEmpty == false)
            let unknown = try expectOK(
                try await service.client.post(
                    "/v1/accounts:createAuthUri",
                    #"{"tenantId":"\#(tenant)","identifier":"\#(InProcess.uniqueEmail())","continueUri":"https://app.example/"}"#
                ))
            #expect(unknown["registered"]?.boolValue == false)
        }
    }

    @Test("createAuthUri refuses a missing identifier or continueUri and a non-email identifier")
    func createAuthUriRequestErrors() async throws {
        try await InProcess.withTokenService { service in
            let path = "/v1/accounts:createAuthUri"
            try expectError(
                try await service.client.post(path, #"{"continueUri":"https://a.example/"}"#), "MISSING_IDENTIFIER")
            try expectError(
                try await service.client.post(path, #"{"identifier":"\#(InProcess.uniqueEmail())"}"#),
                "MISSING_CONTINUE_URI")
            try expectError(
                try await service.client.post(path, #"{"identifier":"nope","continueUri":"https://a.example/"}"#),
                "INVALID_IDENTIFIER")
        }
    }

    @Test("clients cannot use the privileged fields of accounts:update")
    func clientsCannotUsePrivilegedUpdateFields() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let session = try expectOK(try await Self.signUp(service, tenant, InProcess.uniqueEmail()))
            let token = try #require(session["idToken"]?.stringValue)
            func update(_ fields: String) async throws -> Answer {
                try await service.client.post(
                    "/v1/accounts:update", #"{"tenantId":"\#(tenant)","idToken":"\#(token)",\#(fields)}"#)
            }
            try expectError(try await update(#""customAttributes":"{\"admin\":true}""#), "INSUFFICIENT_PERMISSION")
            try expectError(try await update(#""disableUser":true"#), "OPERATION_NOT_ALLOWED")
            try expectError(try await update(#""emailVerified":true"#), "OPERATION_NOT_ALLOWED")
            try expectError(
                try await service.client.post("/v1/accounts:update", #"{"displayName":"x"}"#), "MISSING_ID_TOKEN")
        }
    }
}
