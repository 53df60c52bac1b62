import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared
@testable import TokenService

/// Email changes and their notice to the old address (issue 36; the Firebase emulator's
/// setAccountInfo.spec): a RECOVER_EMAIL mail whose code restores the old address, by the API and on
/// the action page (docs/design-notes.md, "Out-of-band codes and mail").
@Suite("in-process: email change notices and recovery", .enabled(if: PostgresSupport.available))
struct InProcessEmailChangeTests {
    static let password = InProcessPasswordTests.password

    /// A password user of a new tenant: the tenant, the address and the sign-up's answer.
    static func passwordUser(_ service: TokenHarness) async throws -> (tenant: String, email: String, data: JSONValue) {
        let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
        let email = InProcess.uniqueEmail("old")
        let data = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
        return (tenant, email, data)
    }

    static func changeEmail(_ service: TokenHarness, _ tenant: String, _ idToken: String?, to email: String)
        async throws -> Answer
    {
        try await InProcessAccountUpdateTests.update(
            service, tenant, idToken, #""email":"\#(email)","returnSecureToken":true"#)
    }

    static func apply(_ service: TokenHarness, _ tenant: String, _ code: String) async throws -> Answer {
        try await service.client.post("/v1/accounts:update", #"{"tenantId":"\#(tenant)","oobCode":"\#(code)"}"#)
    }

    static func inspect(_ service: TokenHarness, _ tenant: String, _ code: String) async throws -> Answer {
        try await service.client.post(
            "/v1/accounts:resetPassword", #"{"tenantId":"\#(tenant)","oobCode":"\#(code)"}"#)
    }

    /// The mails to `recipient`, once there are `count` (mail queued after the answer comes a moment later).
    static func mails(_ service: TokenHarness, to recipient: String, count: Int = 1) async throws
        -> [(subject: String, body: String)]
    {
        for _ in 0..<50 {
            let mails = try await service.mails(to: recipient)
            if mails.count >= count { return mails }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try await service.mails(to: recipient)
    }

    /// The code of the only mail to `recipient`.
    static func onlyCode(_ service: TokenHarness, to recipient: String) async throws -> String {
        let mails = try await mails(service, to: recipient)
        try #require(mails.count == 1, "mails to \(recipient): \(mails.map(\.subject))")
        return try service.oobCode(inMail: mails[0].body)
    }

    // setAccountInfo.spec:155 "should allow changing email of an existing user, and send out an oob to
    // reset the email", :253 "should reset email when OOB flow is initiated", :1227 "should set
    // tenantId in oobLink".
    @Test("an email change mails the old address a code that restores it and ends the sessions")
    func emailChangeMailsTheOldAddressACodeThatRestoresIt() async throws {
        try await InProcess.withTokenService { service in
            let (tenant, old, first) = try await Self.passwordUser(service)
            let new = InProcess.uniqueEmail("new")
            let changed = try expectOK(
                try await Self.changeEmail(service, tenant, first["idToken"]?.stringValue, to: new))
            #expect(changed["email"]?.stringValue == new)
            #expect(changed["newEmail"]?.stringValue == new)
            #expect(try await service.mails(to: new).isEmpty, "nothing goes to the new address")

            let mails = try await Self.mails(service, to: old)
            try #require(mails.count == 1)
            #expect(mails[0].subject.contains("changed"))
            #expect(mails[0].body.contains(old) && mails[0].body.contains(new))
            let link = try #require(
                mails[0].body.split(whereSeparator: \.isWhitespace).first { $0.contains("oobCode=") })
            #expect(link.hasPrefix(InProcess.publicURL + "/__/auth/action?mode=recoverEmail&"))
            #expect(link.contains("tenantId=\(tenant)"))
            let code = try service.oobCode(inMail: mails[0].body)

            // Inspecting the code tells what it is for, and uses nothing up (the JS SDK's checkActionCode:
            // `email` is the address to restore, `newEmail` the one it replaces).
            let inspected = try expectOK(try await Self.inspect(service, tenant, code))
            #expect(inspected["requestType"]?.stringValue == "RECOVER_EMAIL")
            #expect(inspected["email"]?.stringValue == old)
            #expect(inspected["newEmail"]?.stringValue == new)

            let restored = try expectOK(try await Self.apply(service, tenant, code))
            #expect(restored["email"]?.stringValue == old)
            #expect(restored["emailVerified"]?.boolValue == true)
            #expect(restored["newEmail"] == nil)
            try expectError(try await Self.apply(service, tenant, code), "INVALID_OOB_CODE")
            // The session the change started is over: restoring undoes what may have been a takeover.
            try expectError(
                try await service.refreshRaw(try #require(changed["refreshToken"]?.stringValue)), "TOKEN_EXPIRED")
            try expectOK(try await InProcessPasswordTests.signIn(service, tenant, old))
            try expectError(
                try await InProcessPasswordTests.signIn(service, tenant, new), "INVALID_LOGIN_CREDENTIALS")
            // Restoring is no email change of the user's: no notice of its own.
            #expect(try await service.mails(to: new).isEmpty)
        }
    }

    // setAccountInfo.spec:233 "should set initialEmail for the user, after updating email".
    @Test("the first address is kept as initialEmail, through later changes")
    func initialEmailIsTheFirstAddress() async throws {
        try await InProcess.withTokenService { service in
            let (tenant, old, first) = try await Self.passwordUser(service)
            let localId = try #require(first["localId"]?.stringValue)
            #expect(try await service.directory.lookupUsers(tenant, [localId]).first?["initialEmail"] == nil)
            let changed = try expectOK(
                try await Self.changeEmail(
                    service, tenant, first["idToken"]?.stringValue, to: InProcess.uniqueEmail("new")))
            let idToken = try #require(changed["idToken"]?.stringValue)
            let looked = try expectOK(try await service.lookup(idToken, tenant: tenant))
            #expect(looked["users"]?[0]?["initialEmail"]?.stringValue == old)
            try expectOK(try await Self.changeEmail(service, tenant, idToken, to: InProcess.uniqueEmail("again")))
            #expect(
                try await service.directory.lookupUsers(tenant, [localId]).first?["initialEmail"]?.stringValue == old)
        }
    }

    // setAccountInfo.spec:291 "should disallow resetting an email if another user exists with the
    // same email".
    @Test("restoring an address someone else took meanwhile is EMAIL_EXISTS, and the code is used up")
    func restoringATakenAddressIsRefusedAndUsesTheCode() async throws {
        try await InProcess.withTokenService { service in
            let (tenant, old, first) = try await Self.passwordUser(service)
            let new = InProcess.uniqueEmail("new")
            try expectOK(try await Self.changeEmail(service, tenant, first["idToken"]?.stringValue, to: new))
            let code = try await Self.onlyCode(service, to: old)
            let other = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, old))
            try expectError(try await Self.apply(service, tenant, code), "EMAIL_EXISTS")
            // Used up all the same: with the address free again, the code does nothing.
            try expectOK(try await service.delete(other["idToken"]?.stringValue, tenant: tenant))
            try expectError(try await Self.apply(service, tenant, code), "INVALID_OOB_CODE")
            let users = try await service.directory.lookupUsers(tenant, [try #require(first["localId"]?.stringValue)])
            #expect(users.first?["email"]?.stringValue == new)
        }
    }

    // setAccountInfo.spec:364 "should update email when OOB flow of VERIFY_AND_CHANGE_EMAIL is
    // initiated" (the answer's `newEmail`), :403 "should disallow changing an email if another user
    // exists with the same email" (the code is used up all the same).
    @Test("an applied email-change code answers newEmail and mails the old address; a taken one uses the code")
    func verifyAndChangeEmailAnswersNewEmailAndNotifies() async throws {
        try await InProcess.withTokenService { service in
            let (tenant, old, first) = try await Self.passwordUser(service)
            let idToken = try #require(first["idToken"]?.stringValue)
            let new = InProcess.uniqueEmail("new")
            try expectOK(
                try await service.client.post(
                    "/v1/accounts:sendOobCode",
                    #"{"tenantId":"\#(tenant)","requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(idToken)","newEmail":"\#(new)"}"#
                ))
            let code = try await Self.onlyCode(service, to: new)
            let applied = try expectOK(try await Self.apply(service, tenant, code))
            #expect(applied["email"]?.stringValue == new)
            #expect(applied["newEmail"]?.stringValue == new)
            #expect(applied["emailVerified"]?.boolValue == true)
            let restore = try await Self.onlyCode(service, to: old)
            #expect(try expectOK(try await Self.inspect(service, tenant, restore))["email"]?.stringValue == old)

            // Another change, to an address taken before the code is applied.
            let signedIn = try expectOK(try await InProcessPasswordTests.signIn(service, tenant, new))
            let taken = InProcess.uniqueEmail("taken")
            try expectOK(
                try await service.client.post(
                    "/v1/accounts:sendOobCode",
                    #"{"tenantId":"\#(tenant)","requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(try #require(signedIn["idToken"]?.stringValue))","newEmail":"\#(taken)"}"#
                ))
            let second = try await Self.onlyCode(service, to: taken)
            try expectOK(try await InProcessPasswordTests.signUp(service, tenant, taken))
            try expectError(try await Self.apply(service, tenant, second), "EMAIL_EXISTS")
            try expectError(try await Self.inspect(service, tenant, second), "INVALID_OOB_CODE")
            #expect(try await service.mails(to: new).count == 1, "no notice for a change that did not happen")
        }
    }

    @Test("a signed-in user taking a new address with an email link mails the old one too")
    func emailLinkToANewAddressNotifiesTheOldOne() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(
                #""allowPasswordSignup":true,"enableEmailLinkSignin":true"#)
            let old = InProcess.uniqueEmail("old")
            let user = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, old))
            let new = InProcess.uniqueEmail("new")
            try expectOK(
                try await service.client.post(
                    "/v1/accounts:sendOobCode",
                    #"{"tenantId":"\#(tenant)","requestType":"EMAIL_SIGNIN","email":"\#(new)"}"#))
            let code = try await Self.onlyCode(service, to: new)
            let idToken = try #require(user["idToken"]?.stringValue)
            let linked = try expectOK(
                try await service.client.post(
                    "/v1/accounts:signInWithEmailLink",
                    #"{"tenantId":"\#(tenant)","email":"\#(new)","oobCode":"\#(code)","idToken":"\#(idToken)"}"#))
            #expect(linked["email"]?.stringValue == new)
            let restore = try await Self.onlyCode(service, to: old)
            #expect(try expectOK(try await Self.apply(service, tenant, restore))["email"]?.stringValue == old)
        }
    }

    // setAccountInfo.spec:327 "should not set initial email or send OOB when anon user updates email".
    @Test("an anonymous user given an email, and a profile edit, mail nobody")
    func anonymousUsersAndProfileEditsGetNoNotice() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let anonymous = try await service.signUpAnonymous(tenant)
            let first = InProcess.uniqueEmail("first")
            let second = InProcess.uniqueEmail("second")
            let set = try expectOK(try await Self.changeEmail(service, tenant, anonymous.idToken, to: first))
            #expect(set["email"]?.stringValue == first)
            let again = try expectOK(
                try await Self.changeEmail(service, tenant, set["idToken"]?.stringValue, to: second))
            #expect(again["email"]?.stringValue == second)
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await service.mails(to: first).isEmpty)
            let users = try await service.directory.lookupUsers(tenant, [anonymous.localId])
            #expect(users.first?["email"]?.stringValue == second && users.first?["initialEmail"] == nil)

            let (userTenant, email, user) = try await Self.passwordUser(service)
            try expectOK(
                try await InProcessAccountUpdateTests.update(
                    service, userTenant, user["idToken"]?.stringValue, #""displayName":"Ada""#))
            #expect(try await service.mails(to: email).isEmpty)
        }
    }

    @Test("a notice's code outlives the holder's next changes; restoring an older address voids only newer notices")
    func aNoticeOutlivesLaterChanges() async throws {
        try await InProcess.withTokenService { service in
            let (tenant, old, first) = try await Self.passwordUser(service)
            let middle = InProcess.uniqueEmail("middle")
            let last = InProcess.uniqueEmail("last")
            let moved = try expectOK(
                try await Self.changeEmail(service, tenant, first["idToken"]?.stringValue, to: middle))
            // Whoever holds the session changes the password, then the address again.
            let passwordChanged = try expectOK(
                try await InProcessAccountUpdateTests.update(
                    service, tenant, moved["idToken"]?.stringValue,
                    #""password":"someone else's 1","returnSecureToken":true"#))
            try expectOK(
                try await Self.changeEmail(service, tenant, passwordChanged["idToken"]?.stringValue, to: last))
            let toOld = try await Self.onlyCode(service, to: old)
            let toMiddle = try await Self.onlyCode(service, to: middle)
            // The newer notice restores its address; the older one still restores the first.
            #expect(try expectOK(try await Self.apply(service, tenant, toMiddle))["email"]?.stringValue == middle)
            #expect(try expectOK(try await Self.apply(service, tenant, toOld))["email"]?.stringValue == old)
            try expectError(try await Self.apply(service, tenant, toMiddle), "INVALID_OOB_CODE")

            // The other order: the first address back voids the notice of the change after it.
            let (tenant2, old2, user2) = try await Self.passwordUser(service)
            let middle2 = InProcess.uniqueEmail("middle")
            let moved2 = try expectOK(
                try await Self.changeEmail(service, tenant2, user2["idToken"]?.stringValue, to: middle2))
            try expectOK(
                try await Self.changeEmail(
                    service, tenant2, moved2["idToken"]?.stringValue, to: InProcess.uniqueEmail("last")))
            let toOld2 = try await Self.onlyCode(service, to: old2)
            let toMiddle2 = try await Self.onlyCode(service, to: middle2)
            #expect(try expectOK(try await Self.apply(service, tenant2, toOld2))["email"]?.stringValue == old2)
            try expectError(try await Self.apply(service, tenant2, toMiddle2), "INVALID_OOB_CODE")
        }
    }

    @Test("an email change whose notice has no link to carry is refused and changes nothing")
    func anEmailChangeWithoutALinkIsRefused() async throws {
        // No public URL, and a request from a host that is no authorized domain: no link can be built.
        try await InProcess.withTokenService(configure: {
            $0.publicURL = nil
            $0.authorizedDomains = ["app.example.com"]
        }) { service in
            let (tenant, old, first) = try await Self.passwordUser(service)
            let new = InProcess.uniqueEmail("new")
            try expectError(
                try await Self.changeEmail(service, tenant, first["idToken"]?.stringValue, to: new),
                "UNAUTHORIZED_DOMAIN")
            let user = try await service.directory.lookupUsers(tenant, [try #require(first["localId"]?.stringValue)])
            #expect(user.first?["email"]?.stringValue == old)
            #expect(try await service.mails(to: old).isEmpty)
        }
    }

    @Test("the action page shows a recoverEmail link and restores the address on its form's post")
    func actionPageRestoresTheAddress() async throws {
        try await InProcess.withTokenService { service in
            let (tenant, old, first) = try await Self.passwordUser(service)
            let new = InProcess.uniqueEmail("new")
            try expectOK(try await Self.changeEmail(service, tenant, first["idToken"]?.stringValue, to: new))
            let mails = try await Self.mails(service, to: old)
            let link = try #require(
                mails.first?.body.split(whereSeparator: \.isWhitespace).first { $0.contains("oobCode=") })
            let path = String(link.dropFirst(InProcess.publicURL.count))
            let page = service.client.key(nil)
            let shown = try await page.get(path)
            #expect(shown.status == .ok, "\(shown)")
            #expect(shown.text.contains(#"name="mode" value="recoverEmail""#), "\(shown)")
            #expect(shown.text.contains(old), "the form names the address it restores")
            // Showing the page uses nothing up.
            #expect(
                try await service.directory.lookupUsers(tenant, [try #require(first["localId"]?.stringValue)])
                    .first?["email"]?.stringValue == new)
            let setCookie = try #require(shown.headers[.setCookie])
            let csrf = try #require(
                setCookie.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last.map(String.init))
            let query = try #require(URLComponents(string: String(link))?.queryItems)
            var fields = query.map { ($0.name, $0.value ?? "") }
            fields.append(("csrf", csrf))
            let form = fields.map { "\($0)=\(ActionPageHTML.queryEncode($1))" }.joined(separator: "&")

            // Without the cookie the form is refused and changes nothing.
            let refused = try await page.request(
                .post, ActionPageController.path, body: form,
                headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(refused.status == .forbidden, "\(refused)")

            let done = try await page.request(
                .post, ActionPageController.path, body: form,
                headers: [
                    .contentType: "application/x-www-form-urlencoded",
                    .cookie: "\(ActionPageController.csrfCookie.name)=\(csrf)",
                ])
            #expect(done.status == .ok, "\(done)")
            #expect(done.text.contains(#"data-outcome="success""#), "\(done)")
            #expect(done.text.contains(ActionPageStrings.english.recoverEmailDone))
            let user = try await service.directory.lookupUsers(tenant, [try #require(first["localId"]?.stringValue)])
            #expect(user.first?["email"]?.stringValue == old)
            #expect(user.first?["emailVerified"]?.boolValue == true)
        }
    }
}
