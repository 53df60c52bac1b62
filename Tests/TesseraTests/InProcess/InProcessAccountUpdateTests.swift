import Foundation
import HTTPTypes
import Testing
import TokenService

@testable import TesseraShared

/// `accounts:update` by end users and admins: upgrade, password and email changes, re-authentication,
/// revocation and disabled users (docs/protocol/tokens.md#token-rules,
/// docs/protocol/accounts.md#accounts-and-providers, #password-change-and-revocation, #recent-sign-in,
/// #disabled-users; Tests/stack/test_passwords.py).
@Suite("in-process: account updates, re-authentication and revocation", .enabled(if: PostgresSupport.available))
struct InProcessAccountUpdateTests {
    static let password = InProcessPasswordTests.password

    static func update(_ service: TokenHarness, _ tenant: String, _ idToken: String?, _ fields: String) async throws
        -> Answer
    {
        try await service.client.post(
            "/v1/accounts:update", #"{"tenantId":"\#(tenant)","idToken":"\#(idToken ?? "")",\#(fields)}"#)
    }

    static func update(_ service: TokenHarness, _ tenant: String, _ fields: String) async throws -> Answer {
        try await service.directory.admin.post(service.directory.accountsPath(tenant, "update"), "{\(fields)}")
    }

    /// Waits until the clock has passed `seconds` since the epoch: validSince and auth_time have
    /// whole seconds, so a change must be from a later second than the session it revokes.
    static func waitUntil(epochSeconds seconds: Double) async throws {
        let wait = seconds - Date().timeIntervalSince1970
        if wait > 0 { try await Task.sleep(for: .milliseconds(Int64(wait * 1000) + 1)) }
    }

    static func issuedAt(_ idToken: String?) throws -> Double {
        let token = try #require(idToken)
        let issuedAt = try claims(token)["iat"]?.intValue
        return Double(try #require(issuedAt))
    }

    @Test("an anonymous user upgraded to a password keeps its id, by signUp with its token or by update")
    func anonymousUserUpgradedToPasswordKeepsItsID() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            for via in ["signUp", "update"] {
                let anonymous = try await service.signUpAnonymous(tenant)
                let email = InProcess.uniqueEmail()
                let answer =
                    via == "signUp"
                    ? try await InProcessPasswordTests.signUp(
                        service, tenant, email, extra: #","idToken":"\#(anonymous.idToken)""#)
                    : try await Self.update(
                        service, tenant, anonymous.idToken,
                        #""email":"\#(email)","password":"\#(Self.password)","returnSecureToken":true"#)
                let data = try expectOK(answer)
                #expect(data["localId"]?.stringValue == anonymous.localId, "\(via)")
                let claims = try service.verify(data["idToken"]?.stringValue)
                #expect(claims["sub"]?.stringValue == anonymous.localId)
                #expect(claims["firebase"]?["sign_in_provider"]?.stringValue == "password")
                #expect(claims["email"]?.stringValue == email)
                // The anonymous session is over; the new one works; the password signs in as the same user.
                try expectError(try await service.refreshRaw(anonymous.refreshToken), "TOKEN_EXPIRED")
                let refreshToken = try #require(data["refreshToken"]?.stringValue)
                #expect(try await service.refresh(refreshToken)["user_id"]?.stringValue == anonymous.localId)
                let signedIn = try expectOK(try await InProcessPasswordTests.signIn(service, tenant, email))
                #expect(signedIn["localId"]?.stringValue == anonymous.localId)
            }
        }
    }

    @Test("a password change revokes older tokens and returns fresh ones")
    func passwordChangeRevokesOlderTokens() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let email = InProcess.uniqueEmail()
            let first = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
            let changed = try expectOK(
                try await Self.update(
                    service, tenant, first["idToken"]?.stringValue,
                    #""password":"new password 2","returnSecureToken":true"#))
            #expect(changed["kind"]?.stringValue == Kind.update)
            #expect(changed["localId"] == first["localId"])
            #expect(try service.verify(changed["idToken"]?.stringValue)["sub"] == first["localId"])

            try expectError(try await service.refreshRaw(first["refreshToken"]?.stringValue), "TOKEN_EXPIRED")
            try expectError(try await service.lookup(first["idToken"]?.stringValue, tenant: tenant), "TOKEN_EXPIRED")
            try expectOK(try await service.lookup(changed["idToken"]?.stringValue, tenant: tenant))
            _ = try await service.refresh(try #require(changed["refreshToken"]?.stringValue))
            try expectError(
                try await InProcessPasswordTests.signIn(service, tenant, email), "INVALID_LOGIN_CREDENTIALS")
            try expectOK(try await InProcessPasswordTests.signIn(service, tenant, email, password: "new password 2"))
        }
    }

    @Test("sensitive changes need a recent sign-in; profile edits do not, and anonymous users may always upgrade")
    func sensitiveChangesNeedARecentSignIn() async throws {
        try await InProcess.withTokenService(configure: { $0.reauthWindow = .seconds(1) }) { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let email = InProcess.uniqueEmail()
            let session = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
            let token = session["idToken"]?.stringValue
            let anonymous = try await service.signUpAnonymous(tenant)
            // Beyond the 1 s window even in whole seconds.
            try await Self.waitUntil(epochSeconds: try Self.issuedAt(token) + 2.05)
            for fields in [
                #""password":"another one""#, #""email":"\#(InProcess.uniqueEmail())""#,
                #""deleteProvider":["password"]"#,
            ] {
                try expectError(
                    try await Self.update(service, tenant, token, fields), "CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
            }
            try expectError(try await service.delete(token, tenant: tenant), "CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
            // An email change by mailed code is sensitive too (docs/protocol/accounts.md#accounts-and-providers).
            try expectError(
                try await service.client.post(
                    "/v1/accounts:sendOobCode",
                    #"{"tenantId":"\#(tenant)","requestType":"VERIFY_AND_CHANGE_EMAIL","idToken":"\#(token ?? "")","newEmail":"\#(InProcess.uniqueEmail())"}"#
                ), "CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
            // Profile edits are not sensitive, and a fresh sign-in opens the window again.
            let late = try expectOK(try await Self.update(service, tenant, token, #""displayName":"Late""#))
            #expect(late["displayName"]?.stringValue == "Late")
            let fresh = try expectOK(try await InProcessPasswordTests.signIn(service, tenant, email))
            let changed = try expectOK(
                try await Self.update(service, tenant, fresh["idToken"]?.stringValue, #""password":"another one""#))
            // The change revoked the token it was made with, even within the same second
            // (docs/protocol/accounts.md#password-change-and-revocation).
            try expectError(try await service.lookup(fresh["idToken"]?.stringValue, tenant: tenant), "TOKEN_EXPIRED")
            // A 4096-character password is still a password (docs/protocol/accounts.md#passwords: the upper
            // bound is inclusive).
            try expectOK(
                try await Self.update(
                    service, tenant, changed["idToken"]?.stringValue,
                    #""password":"\#(String(repeating: "p", count: 4096))""#))
            // An anonymous user has no credential to prove again: it upgrades after the window too.
            let upgraded = try expectOK(
                try await Self.update(
                    service, tenant, anonymous.idToken,
                    #""email":"\#(InProcess.uniqueEmail())","password":"\#(Self.password)""#))
            #expect(upgraded["localId"]?.stringValue == anonymous.localId)
        }
    }

    @Test("profile updates show in the next token; deleteAttribute removes one field, an unknown one is refused")
    func profileUpdatesAndDeletions() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let session = try expectOK(
                try await InProcessPasswordTests.signUp(service, tenant, InProcess.uniqueEmail()))
            let data = try expectOK(
                try await Self.update(
                    service, tenant, session["idToken"]?.stringValue,
                    #""displayName":"Grace","photoUrl":"https://img.example/g.png""#))
            #expect(data["displayName"]?.stringValue == "Grace")
            #expect(data["photoUrl"]?.stringValue == "https://img.example/g.png")
            #expect(data["idToken"] == nil, "a profile edit issues no new tokens")
            let refreshed = try await service.refresh(try #require(session["refreshToken"]?.stringValue))
            let claims = try service.verify(refreshed["id_token"]?.stringValue)
            #expect(
                claims["name"]?.stringValue == "Grace" && claims["picture"]?.stringValue == "https://img.example/g.png")
            let idToken = refreshed["id_token"]?.stringValue
            let deleted = try expectOK(
                try await Self.update(service, tenant, idToken, #""deleteAttribute":["DISPLAY_NAME"]"#))
            #expect(deleted["displayName"] == nil && deleted["photoUrl"] != nil)
            try expectStatusError(
                try await Self.update(service, tenant, idToken, #""deleteAttribute":["NICKNAME"]"#), .badRequest,
                "INVALID_ARGUMENT")
        }
    }

    @Test("an email change unverifies the address and refuses one that is taken")
    func emailChangeUnverifiesAndRefusesTakenAddresses() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let taken = InProcess.uniqueEmail()
            try expectOK(try await InProcessPasswordTests.signUp(service, tenant, taken))
            let session = try expectOK(
                try await InProcessPasswordTests.signUp(service, tenant, InProcess.uniqueEmail()))
            let token = session["idToken"]?.stringValue
            try expectError(
                try await Self.update(service, tenant, token, #""email":"\#(taken.uppercased())""#), "EMAIL_EXISTS")
            try expectError(try await Self.update(service, tenant, token, #""email":"bad""#), "INVALID_EMAIL")
            let newAddress = InProcess.uniqueEmail()
            let data = try expectOK(try await Self.update(service, tenant, token, #""email":"\#(newAddress)""#))
            #expect(data["email"]?.stringValue == newAddress && data["emailVerified"]?.boolValue == false)
            #expect(try service.verify(data["idToken"]?.stringValue)["email"]?.stringValue == newAddress)
            try expectOK(try await InProcessPasswordTests.signIn(service, tenant, newAddress))
        }
    }

    @Test("a disabled user is refused everywhere but by admins, and what was issued before stays revoked")
    func disabledUsersAreRefusedEverywhereButByAdmins() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let email = InProcess.uniqueEmail()
            let session = try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email))
            let localID = try #require(session["localId"]?.stringValue)
            let token = session["idToken"]?.stringValue
            try await Self.waitUntil(epochSeconds: try Self.issuedAt(token) + 1.05)
            let disabled = try expectOK(
                try await Self.update(service, tenant, #""localId":"\#(localID)","disableUser":true"#))
            #expect(disabled["localId"]?.stringValue == localID)

            try expectError(try await InProcessPasswordTests.signIn(service, tenant, email), "USER_DISABLED")
            // Under enumeration protection (the default) a wrong password learns nothing of the
            // disable: the same answer as for any account (issue #35).
            try expectError(
                try await InProcessPasswordTests.signIn(service, tenant, email, password: "wrong password"),
                "INVALID_LOGIN_CREDENTIALS")
            try expectError(try await service.refreshRaw(session["refreshToken"]?.stringValue), "USER_DISABLED")
            try expectError(try await service.lookup(token, tenant: tenant), "USER_DISABLED")
            try expectError(try await Self.update(service, tenant, token, #""displayName":"x""#), "USER_DISABLED")
            #expect(try await service.directory.lookupUsers(tenant, [localID]).first?["disabled"]?.boolValue == true)

            try expectOK(try await Self.update(service, tenant, #""localId":"\#(localID)","disableUser":false"#))
            let fresh = try expectOK(try await InProcessPasswordTests.signIn(service, tenant, email))
            _ = try await service.refresh(try #require(fresh["refreshToken"]?.stringValue))
            try expectError(try await service.refreshRaw(session["refreshToken"]?.stringValue), "TOKEN_EXPIRED")
            try expectError(try await service.lookup(token, tenant: tenant), "TOKEN_EXPIRED")
        }
    }

    @Test("an admin's validSince (a JSON number of seconds) revokes earlier sessions")
    func adminValidSinceRevokesEarlierSessions() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let session = try expectOK(
                try await InProcessPasswordTests.signUp(service, tenant, InProcess.uniqueEmail()))
            let token = session["idToken"]?.stringValue
            try await Self.waitUntil(epochSeconds: try Self.issuedAt(token) + 1.05)
            let localID = try #require(session["localId"]?.stringValue)
            let now = Int(Date().timeIntervalSince1970)
            try expectOK(try await Self.update(service, tenant, #""localId":"\#(localID)","validSince":\#(now)"#))
            try expectError(try await service.refreshRaw(session["refreshToken"]?.stringValue), "TOKEN_EXPIRED")
            try expectError(try await service.lookup(token, tenant: tenant), "TOKEN_EXPIRED")
            try expectError(try await Self.update(service, tenant, #""localId":"no-such-user""#), "USER_NOT_FOUND")
            try expectError(try await Self.update(service, tenant, ""), "MISSING_LOCAL_ID")
        }
    }
}
