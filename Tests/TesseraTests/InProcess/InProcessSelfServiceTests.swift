import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// Self-service switches (docs/protocol/admin.md#self-service-settings, docs/protocol/accounts.md#user-actions,
/// #project-and-tenant-switches) per tenant and for the default scope; changes made over the admin API take
/// effect on the very next client call. Formerly Tests/stack/test_self_service.py.
@Suite("in-process: self-service switches", .enabled(if: PostgresSupport.available))
struct InProcessSelfServiceTests {
    static let deleteKind = "identitytoolkit#DeleteAccountResponse"

    static func permissions(_ object: JSONValue) -> JSONValue? { object["client"]?["permissions"] }

    /// A dotted path of a JSON object read as a switch (the Python tests' `_flag`): absent or null is off,
    /// a boolean is itself, anything else is on.
    static func flag(_ object: JSONValue, _ dotted: String) -> Bool {
        var value: JSONValue? = object
        for part in dotted.split(separator: ".") {
            guard case .object(let members)? = value else { return false }
            value = members[String(part)]
        }
        switch value {
        case nil, .null?: return false
        case .bool(let on)?: return on
        default: return true
        }
    }

    /// Patches `on` into the scope at `path` (masked by `mask`): its next anonymous sign-up is refused with
    /// `refusal`; patched back to `off`, the next one succeeds.
    static func expectSwitch(
        _ service: TokenHarness, _ path: String, tenant: String?, on: String, off: String, mask: String,
        refusal: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try expectOK(try await service.directory.patch(path, on, mask: mask), sourceLocation: sourceLocation)
        try expectError(try await service.signUpRaw(tenant), refusal, sourceLocation: sourceLocation)
        try expectOK(try await service.directory.patch(path, off, mask: mask), sourceLocation: sourceLocation)
        try expectOK(try await service.signUpRaw(tenant), sourceLocation: sourceLocation)
    }

    static func tenantPath(_ service: TokenHarness, _ tenant: String) -> String {
        "\(service.directory.tenantsPath)/\(tenant)"
    }

    @Test("anonymous sign-up is ADMIN_ONLY_OPERATION in a tenant that disables it")
    func anonymousSignUpRefusedWhenTenantDisablesIt() async throws {
        try await InProcess.withTokenService { service in
            let off = try await service.directory.createTenant(#""enableAnonymousUser":false"#)
            #expect((off["enableAnonymousUser"]?.boolValue ?? false) == false, "\(off)")
            try expectError(
                try await service.signUpRaw(try #require(off["tenantId"]?.stringValue)), "ADMIN_ONLY_OPERATION")
        }
    }

    @Test("anonymous sign-up is ADMIN_ONLY_OPERATION in a tenant with disabledUserSignup")
    func anonymousSignUpRefusedWhenUserSignupDisabled() async throws {
        try await InProcess.withTokenService { service in
            let closed = try await service.directory.createTenant(
                #""client":{"permissions":{"disabledUserSignup":true}}"#)
            #expect(Self.permissions(closed)?["disabledUserSignup"]?.boolValue == true, "\(closed)")
            try expectError(
                try await service.signUpRaw(try #require(closed["tenantId"]?.stringValue)), "ADMIN_ONLY_OPERATION")
        }
    }

    @Test("sign-up is PROJECT_DISABLED in a tenant with disableAuth")
    func signUpRefusedInDisabledTenant() async throws {
        try await InProcess.withTokenService { service in
            let disabled = try await service.directory.createTenant(#""disableAuth":true"#)
            try expectError(
                try await service.signUpRaw(try #require(disabled["tenantId"]?.stringValue)), "PROJECT_DISABLED")
        }
    }

    @Test("a tenant's switches patched with updateMask take effect on the very next sign-up")
    func patchingSwitchesTakesEffectImmediately() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenant = try await directory.createTenantID()
            let path = Self.tenantPath(service, tenant)
            try expectOK(try await service.signUpRaw(tenant))

            // disabledUserSignup on: the very next sign-up is refused.
            var answer = try await directory.patch(
                path, #"{"client":{"permissions":{"disabledUserSignup":true}}}"#,
                mask: "client.permissions.disabledUserSignup")
            let patched = try expectOK(answer)
            #expect(Self.permissions(patched)?["disabledUserSignup"]?.boolValue == true, "\(answer)")
            #expect(patched["enableAnonymousUser"]?.boolValue == true, "mask not respected: \(answer)")
            try expectError(try await service.signUpRaw(tenant), "ADMIN_ONLY_OPERATION")

            // ... and off again.
            try expectOK(
                try await directory.patch(
                    path, #"{"client":{"permissions":{"disabledUserSignup":false}}}"#,
                    mask: "client.permissions.disabledUserSignup"))
            try expectOK(try await service.signUpRaw(tenant))

            // enableAnonymousUser off / on.
            answer = try await directory.patch(path, #"{"enableAnonymousUser":false}"#, mask: "enableAnonymousUser")
            #expect((try expectOK(answer)["enableAnonymousUser"]?.boolValue ?? false) == false, "\(answer)")
            try expectError(try await service.signUpRaw(tenant), "ADMIN_ONLY_OPERATION")
            try expectOK(try await directory.patch(path, #"{"enableAnonymousUser":true}"#, mask: "enableAnonymousUser"))
            try expectOK(try await service.signUpRaw(tenant))

            // Both in one mask.
            answer = try await directory.patch(
                path, #"{"enableAnonymousUser":false,"client":{"permissions":{"disabledUserSignup":true}}}"#,
                mask: "enableAnonymousUser,client.permissions.disabledUserSignup")
            let both = try expectOK(answer)
            #expect(
                (both["enableAnonymousUser"]?.boolValue ?? false) == false
                    && Self.permissions(both)?["disabledUserSignup"]?.boolValue == true, "\(answer)")
            try expectError(try await service.signUpRaw(tenant), "ADMIN_ONLY_OPERATION")
            try expectOK(
                try await directory.patch(
                    path, #"{"enableAnonymousUser":true,"client":{"permissions":{"disabledUserSignup":false}}}"#,
                    mask: "enableAnonymousUser,client.permissions.disabledUserSignup"))
            try expectOK(try await service.signUpRaw(tenant))

            // disableAuth on: sign-up answers PROJECT_DISABLED; off again restores it.
            try await Self.expectSwitch(
                service, path, tenant: tenant, on: #"{"disableAuth":true}"#, off: #"{"disableAuth":false}"#,
                mask: "disableAuth", refusal: "PROJECT_DISABLED")
        }
    }

    @Test("disabledUserDeletion refuses the client's own deletion, not an admin's, and not sign-up")
    func disabledUserDeletionBlocksClientDeleteButNotAdmin() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenant = try await directory.createTenantID()
            let path = Self.tenantPath(service, tenant)
            let session = try await service.signUpAnonymous(tenant)
            let answer = try await directory.patch(
                path, #"{"client":{"permissions":{"disabledUserDeletion":true}}}"#,
                mask: "client.permissions.disabledUserDeletion")
            #expect(Self.permissions(try expectOK(answer))?["disabledUserDeletion"]?.boolValue == true, "\(answer)")

            try expectError(try await service.delete(session.idToken, tenant: tenant), "ADMIN_ONLY_OPERATION")
            #expect(
                try await directory.lookupUsers(tenant, [session.localId]).map { $0["localId"]?.stringValue } == [
                    session.localId
                ])
            // Sign-up is unaffected by the deletion switch.
            let other = try await service.signUpAnonymous(tenant)

            // Admin delete still works.
            let deleted = try await directory.deleteUser(tenant, session.localId)
            #expect(try expectOK(deleted)["kind"]?.stringValue == Self.deleteKind, "\(deleted)")
            #expect(try await directory.lookupUsers(tenant, [session.localId]).isEmpty)

            // Switch off: the client may delete itself again, at once.
            try expectOK(
                try await directory.patch(
                    path, #"{"client":{"permissions":{"disabledUserDeletion":false}}}"#,
                    mask: "client.permissions.disabledUserDeletion"))
            #expect(
                try expectOK(try await service.delete(other.idToken, tenant: tenant))["kind"]?.stringValue
                    == Self.deleteKind)
        }
    }

    @Test("the default scope's switches in /v2/projects/{p}/config govern tenantless sign-up and deletion at once")
    func projectConfigSwitchesForDefaultScope() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let config = directory.configPath
            var answer = try await directory.admin.get(config)
            let original = try expectOK(answer)
            #expect(original["name"]?.stringValue == "projects/\(InProcess.projectID)/config", "\(answer)")
            #expect(original["signIn"]?.objectValue != nil, "\(answer)")
            // The top-level mirrors agree with signIn.*.
            #expect(Self.flag(original, "enableAnonymousUser") == Self.flag(original, "signIn.anonymous.enabled"))
            #expect(Self.flag(original, "allowPasswordSignup") == Self.flag(original, "signIn.email.enabled"))

            let touched = [
                "signIn.anonymous.enabled", "client.permissions.disabledUserSignup",
                "client.permissions.disabledUserDeletion", "disableAuth",
            ]
            let restoreBody = """
                {"disableAuth":\(Self.flag(original, "disableAuth")),
                 "signIn":{"anonymous":{"enabled":\(Self.flag(original, "signIn.anonymous.enabled"))}},
                 "client":{"permissions":{
                   "disabledUserSignup":\(Self.flag(original, "client.permissions.disabledUserSignup")),
                   "disabledUserDeletion":\(Self.flag(original, "client.permissions.disabledUserDeletion"))}}}
                """

            // Anonymous sign-in on, no user actions blocked.
            answer = try await directory.patch(
                config,
                #"{"signIn":{"anonymous":{"enabled":true}},"client":{"permissions":{"disabledUserSignup":false,"disabledUserDeletion":false}}}"#,
                mask: touched.joined(separator: ","))
            var current = try expectOK(answer)
            #expect(Self.flag(current, "signIn.anonymous.enabled") == true, "\(answer)")
            #expect(Self.flag(current, "enableAnonymousUser") == true, "\(answer)")
            // Fields outside the mask kept their values.
            #expect(Self.flag(current, "signIn.email.enabled") == Self.flag(original, "signIn.email.enabled"))
            #expect(
                Self.flag(current, "signIn.allowDuplicateEmails") == Self.flag(original, "signIn.allowDuplicateEmails"))

            // Anonymous sign-up in the default scope: no tenant anywhere.
            answer = try await service.signUpRaw(nil)
            let data = try expectOK(answer)
            #expect(data["kind"]?.stringValue == "identitytoolkit#SignupNewUserResponse", "\(answer)")
            let idToken = try #require(data["idToken"]?.stringValue)
            let localId = try #require(data["localId"]?.stringValue)
            let firebase = try #require(try claims(idToken)["firebase"]?.objectValue)
            #expect(firebase["tenant"] == nil, "\(firebase)")
            #expect(firebase["sign_in_provider"]?.stringValue == "anonymous")
            let user = try #require(try expectOK(try await service.lookup(idToken))["users"]?[0])
            #expect(user["localId"]?.stringValue == localId && user["tenantId"] == nil, "\(user)")
            #expect(try await directory.lookupUsers(nil, [localId]).map { $0["localId"]?.stringValue } == [localId])
            let refreshed = try await service.refresh(try #require(data["refreshToken"]?.stringValue))
            #expect(
                try claims(try #require(refreshed["id_token"]?.stringValue))["firebase"]?["tenant"] == nil)

            // disableAuth, as for tenants (docs/protocol/admin.md#self-service-settings): PROJECT_DISABLED at
            // once; and back.
            #expect(Self.flag(current, "disableAuth") == false, "\(answer)")
            try expectOK(try await directory.patch(config, #"{"disableAuth":true}"#, mask: "disableAuth"))
            try expectError(try await service.signUpRaw(nil), "PROJECT_DISABLED")
            try expectError(try await service.lookup(idToken), "PROJECT_DISABLED")
            try expectOK(try await directory.patch(config, #"{"disableAuth":false}"#, mask: "disableAuth"))
            try expectOK(try await service.lookup(idToken))

            // disabledUserSignup → ADMIN_ONLY_OPERATION, immediately; and back.
            try await Self.expectSwitch(
                service, config, tenant: nil, on: #"{"client":{"permissions":{"disabledUserSignup":true}}}"#,
                off: #"{"client":{"permissions":{"disabledUserSignup":false}}}"#,
                mask: "client.permissions.disabledUserSignup", refusal: "ADMIN_ONLY_OPERATION")

            // The top-level alias in the mask: enableAnonymousUser off.
            answer = try await directory.patch(config, #"{"enableAnonymousUser":false}"#, mask: "enableAnonymousUser")
            current = try expectOK(answer)
            #expect(Self.flag(current, "signIn.anonymous.enabled") == false, "\(answer)")
            #expect(Self.flag(try expectOK(try await directory.admin.get(config)), "enableAnonymousUser") == false)
            try expectError(try await service.signUpRaw(nil), "ADMIN_ONLY_OPERATION")
            try expectOK(
                try await directory.patch(
                    config, #"{"signIn":{"anonymous":{"enabled":true}}}"#, mask: "signIn.anonymous.enabled"))
            let second = try await service.signUpAnonymous(nil)

            // disabledUserDeletion: the client cannot delete itself; the project-level admin can.
            try expectOK(
                try await directory.patch(
                    config, #"{"client":{"permissions":{"disabledUserDeletion":true}}}"#,
                    mask: "client.permissions.disabledUserDeletion"))
            try expectError(try await service.delete(second.idToken), "ADMIN_ONLY_OPERATION")
            answer = try await directory.deleteUser(nil, second.localId)
            #expect(try expectOK(answer)["kind"]?.stringValue == Self.deleteKind, "\(answer)")
            #expect(try await directory.lookupUsers(nil, [second.localId]).isEmpty)
            try expectOK(
                try await directory.patch(
                    config, #"{"client":{"permissions":{"disabledUserDeletion":false}}}"#,
                    mask: "client.permissions.disabledUserDeletion"))
            #expect(try expectOK(try await service.delete(idToken))["kind"]?.stringValue == Self.deleteKind)

            // What the stack test put back: the original values of every switch it touched.
            answer = try await directory.patch(config, restoreBody, mask: touched.joined(separator: ","))
            #expect(answer.status == .ok, "could not restore the project config: \(answer)")
            let restored = try expectOK(try await directory.admin.get(config))
            for path in touched {
                #expect(Self.flag(restored, path) == Self.flag(original, path), "\(path): \(original) / \(restored)")
            }
        }
    }

    @Test("another project's config and tenants are PROJECT_NOT_FOUND")
    func wrongProjectIDIsRefused() async throws {
        try await InProcess.withDirectory { directory in
            let config = "/v2/projects/no-such-project/config"
            let tenants = "/v2/projects/no-such-project/tenants"
            for answer in [
                try await directory.admin.get(config),
                try await directory.patch(
                    config, #"{"signIn":{"anonymous":{"enabled":true}}}"#, mask: "signIn.anonymous.enabled"),
                try await directory.admin.get(tenants),
                try await directory.admin.post(tenants, #"{"displayName":"wrongproj"}"#),
            ] {
                try expectError(answer, "PROJECT_NOT_FOUND")
            }
        }
    }
}
