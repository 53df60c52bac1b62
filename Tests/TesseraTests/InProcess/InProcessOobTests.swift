import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared
@testable import TokenService

/// `sendOobCode`, `resetPassword` and email-link details of the Firebase emulator's oob.spec and
/// emailLink.spec (issue 36): what the answers name, and which error comes when.
@Suite("in-process: out-of-band code details", .enabled(if: PostgresSupport.available))
struct InProcessOobTests {
    static func send(_ service: TokenHarness, _ tenant: String, _ fields: String) async throws -> Answer {
        try await service.client.post("/v1/accounts:sendOobCode", #"{"tenantId":"\#(tenant)",\#(fields)}"#)
    }

    /// An admin's call on the public path (the Admin SDKs' emulator mode), with the bootstrap bearer.
    static func sendAsAdmin(_ service: TokenHarness, _ tenant: String, _ fields: String) async throws -> Answer {
        try await service.client.key(nil).bearer(InProcess.adminToken).post(
            "/v1/accounts:sendOobCode", #"{"tenantId":"\#(tenant)",\#(fields)}"#)
    }

    static func turnOffProtection(_ service: TokenHarness) async throws {
        try expectOK(
            try await service.directory.admin.request(
                .patch,
                "/v2/projects/\(InProcess.projectID)/config?updateMask=emailPrivacyConfig.enableImprovedEmailPrivacy",
                body: #"{"emailPrivacyConfig":{"enableImprovedEmailPrivacy":false}}"#))
    }

    // oob.spec:447 "should generate OOB code for verify and change email", :55 "should return OOB code
    // directly for requests with OAuth 2": the answer names the current address, not the new one.
    @Test("an email-change code's answer names the current address, for users and admins")
    func verifyAndChangeEmailAnswersTheCurrentAddress() async throws {
        try await InProcess.withTokenService { service in
            let (tenant, email, user) = try await InProcessEmailChangeTests.passwordUser(service)
            let idToken = try #require(user["idToken"]?.stringValue)
            let new = InProcess.uniqueEmail("new")
            let sent = try expectOK(
                try await Self.send(
                    service, tenant,
                    #""requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(idToken)","newEmail":"\#(new)""#))
            #expect(sent["kind"]?.stringValue == "identitytoolkit#GetOobConfirmationCodeResponse")
            #expect(sent["email"]?.stringValue == email)
            #expect(sent["oobCode"] == nil && sent["oobLink"] == nil)
            let linked = try expectOK(
                try await Self.sendAsAdmin(
                    service, tenant,
                    #""requestType":"VERIFY_AND_CHANGE_EMAIL","email":"\#(email)","newEmail":"\#(new)","returnOobLink":true"#
                ))
            #expect(linked["email"]?.stringValue == email)
            #expect(linked["oobCode"]?.stringValue != nil && linked["oobLink"]?.stringValue != nil)
        }
    }

    // oob.spec:97 "should return OOB code by idToken for OAuth 2 requests as well".
    @Test("an admin names the user by ID token")
    func adminNamesTheUserByIDToken() async throws {
        try await InProcess.withTokenService { service in
            let (tenant, email, user) = try await InProcessEmailChangeTests.passwordUser(service)
            let idToken = try #require(user["idToken"]?.stringValue)
            let verify = try expectOK(
                try await Self.sendAsAdmin(
                    service, tenant, #""requestType":"VERIFY_EMAIL","idToken":"\#(idToken)","returnOobLink":true"#))
            #expect(verify["email"]?.stringValue == email)
            let code = try #require(verify["oobCode"]?.stringValue)
            #expect(verify["oobLink"]?.stringValue?.contains("mode=verifyEmail") == true)
            let applied = try expectOK(
                try await InProcessEmailChangeTests.apply(service, tenant, code))
            #expect(applied["emailVerified"]?.boolValue == true)

            let change = try expectOK(
                try await Self.sendAsAdmin(
                    service, tenant,
                    #""requestType":"VERIFY_AND_CHANGE_EMAIL","email":"someone@example.com","idToken":"\#(idToken)","newEmail":"\#(InProcess.uniqueEmail("new"))","returnOobLink":true"#
                ))
            #expect(change["email"]?.stringValue == email, "the ID token names the user, not the email")
            #expect(change["oobCode"]?.stringValue != nil)
            // A token that does not verify is refused before anything is asked.
            try expectError(
                try await Self.sendAsAdmin(
                    service, tenant, #""requestType":"VERIFY_EMAIL","idToken":"hoge","returnOobLink":true"#),
                "INVALID_ID_TOKEN")
        }
    }

    // oob.spec:156 "should error when trying to verify email without idToken or email", :171 "…without
    // idToken if not returnOobLink", :498 and :538 (an email change without one: MISSING_ID_TOKEN).
    @Test("a verification without a valid ID token is INVALID_ID_TOKEN, an email change without one MISSING_ID_TOKEN")
    func missingAndInvalidIDTokens() async throws {
        try await InProcess.withTokenService { service in
            let (tenant, email, _) = try await InProcessEmailChangeTests.passwordUser(service)
            try expectError(
                try await Self.send(service, tenant, #""requestType":"VERIFY_EMAIL","idToken":"hoge""#),
                "INVALID_ID_TOKEN")
            try expectError(
                try await Self.send(service, tenant, #""requestType":"VERIFY_EMAIL","email":"\#(email)""#),
                "INVALID_ID_TOKEN")
            try expectError(
                try await Self.send(
                    service, tenant, #""requestType":"VERIFY_AND_CHANGE_EMAIL","newEmail":"b@example.com""#),
                "MISSING_ID_TOKEN")
            try expectError(
                try await Self.send(
                    service, tenant,
                    #""requestType":"VERIFY_AND_CHANGE_EMAIL","email":"\#(email)","newEmail":"b@example.com""#),
                "MISSING_ID_TOKEN")
            try expectError(
                try await Self.send(service, tenant, #""requestType":"VERIFY_AND_CHANGE_EMAIL","email":"\#(email)""#),
                "MISSING_NEW_EMAIL")
            // Admins name the address; without one it is MISSING_EMAIL.
            try expectError(
                try await Self.sendAsAdmin(service, tenant, #""requestType":"VERIFY_EMAIL","returnOobLink":true"#),
                "MISSING_EMAIL")
            // Nobody asks for a recovery code: only an email change sends one.
            try expectStatusError(
                try await Self.send(service, tenant, #""requestType":"RECOVER_EMAIL","email":"\#(email)""#),
                .badRequest, "INVALID_ARGUMENT")
        }
    }

    // oob.spec:314 "should return purpose of oobCodes via resetPassword endpoint", except that an
    // email-link code's address is answered: the Apple SDK's checkActionCode requires it.
    @Test("inspecting a code tells its purpose and address, an email-link code's too")
    func inspectionTellsPurposeAndAddress() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(
                #""allowPasswordSignup":true,"enableEmailLinkSignin":true"#)
            let email = InProcess.uniqueEmail()
            let user = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
            let idToken = try #require(user["idToken"]?.stringValue)
            let signInAddress = InProcess.uniqueEmail("link")
            let new = InProcess.uniqueEmail("new")
            try expectOK(try await Self.send(service, tenant, #""requestType":"PASSWORD_RESET","email":"\#(email)""#))
            try expectOK(try await Self.send(service, tenant, #""requestType":"VERIFY_EMAIL","idToken":"\#(idToken)""#))
            try expectOK(
                try await Self.send(service, tenant, #""requestType":"EMAIL_SIGNIN","email":"\#(signInAddress)""#))
            try expectOK(
                try await Self.send(
                    service, tenant,
                    #""requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(idToken)","newEmail":"\#(new)""#))
            // The reset's mail is queued after its answer (protection): the two mails' order is open.
            let toUser = try await InProcessEmailChangeTests.mails(service, to: email, count: 2)
            try #require(toUser.count == 2)
            let reset = toUser[toUser[0].subject.contains("password") ? 0 : 1]
            let verify = toUser[toUser[0].subject.contains("password") ? 1 : 0]
            let expected: [(String, String, String?)] = [
                (try service.oobCode(inMail: reset.body), "PASSWORD_RESET", email),
                (try service.oobCode(inMail: verify.body), "VERIFY_EMAIL", email),
                (
                    try await InProcessEmailChangeTests.onlyCode(service, to: signInAddress), "EMAIL_SIGNIN",
                    signInAddress
                ),
                (try await InProcessEmailChangeTests.onlyCode(service, to: new), "VERIFY_AND_CHANGE_EMAIL", email),
            ]
            for (code, type, shown) in expected {
                for _ in 0..<2 {
                    let inspected = try expectOK(try await InProcessEmailChangeTests.inspect(service, tenant, code))
                    #expect(inspected["requestType"]?.stringValue == type)
                    #expect(inspected["email"]?.stringValue == shown, "\(type): \(inspected)")
                    #expect(inspected["newEmail"]?.stringValue == (type == "VERIFY_AND_CHANGE_EMAIL" ? new : nil))
                }
            }
        }
    }

    // oob.spec:410 "…non-existent user with improved email privacy disabled", :422 "…enabled".
    @Test("an admin's reset link for an unknown address: EMAIL_NOT_FOUND, or under protection the plain answer")
    func adminResetOfAnUnknownAddress() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let unknown = InProcess.uniqueEmail("nobody")
            let fields = #""requestType":"PASSWORD_RESET","email":"\#(unknown)","returnOobLink":true"#
            let protected = try expectOK(try await Self.sendAsAdmin(service, tenant, fields))
            #expect(
                protected
                    == .object([
                        "kind": .string("identitytoolkit#GetOobConfirmationCodeResponse"), "email": .string(unknown),
                    ]))
            #expect(try await service.mails(to: unknown).isEmpty)
            try await Self.turnOffProtection(service)
            try expectError(try await Self.sendAsAdmin(service, tenant, fields), "EMAIL_NOT_FOUND")
            // A verification for an unknown address stays USER_NOT_FOUND (oob.spec:183).
            try expectError(
                try await Self.sendAsAdmin(
                    service, tenant, #""requestType":"VERIFY_EMAIL","email":"\#(unknown)","returnOobLink":true"#),
                "USER_NOT_FOUND")
        }
    }

    // emailLink.spec:106 "should error if user is disabled".
    @Test("an email link of a user disabled since it was sent answers USER_DISABLED")
    func emailLinkOfADisabledUser() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(
                #""allowPasswordSignup":true,"enableEmailLinkSignin":true"#)
            let email = InProcess.uniqueEmail()
            let user = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
            let localId = try #require(user["localId"]?.stringValue)
            try expectOK(try await Self.send(service, tenant, #""requestType":"EMAIL_SIGNIN","email":"\#(email)""#))
            let code = try await InProcessEmailChangeTests.onlyCode(service, to: email)
            try expectOK(
                try await InProcessAccountUpdateTests.update(
                    service, tenant, #""localId":"\#(localId)","disableUser":true"#))
            let body = #"{"tenantId":"\#(tenant)","email":"\#(email)","oobCode":"\#(code)"}"#
            try expectError(try await service.client.post("/v1/accounts:signInWithEmailLink", body), "USER_DISABLED")
            try expectError(
                try await service.client.post(
                    "/v1/accounts:signInWithEmailLink",
                    #"{"tenantId":"\#(tenant)","email":"\#(email)","oobCode":"not-a-code"}"#),
                "INVALID_OOB_CODE")
        }
    }
}
