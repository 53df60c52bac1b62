import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// Issue #36's tenants-and-config theme, ported from the Firebase emulator's `tenant.spec.ts` and
/// `config.spec.ts` (each test names the `spec:line` it ports); docs/design-notes.md, "Tenants and settings".
@Suite("in-process: the emulator's specs on tenants and the project config", .enabled(if: PostgresSupport.available))
struct InProcessTenantConfigTests {
    static let configPath = "/v2/projects/\(InProcess.projectID)/config"
    static let phone = #"{"enabledProviders":["PROVIDER_UNSPECIFIED","PHONE_SMS"],"state":"ENABLED"}"#

    static func json(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    static func patch(_ directory: Directory, _ path: String, mask: String?, _ body: String) async throws -> Answer {
        try await directory.admin.request(.patch, path + (mask.map { "?updateMask=\($0)" } ?? ""), body: body)
    }

    /// tenant:9 and tenant:63: `mfaConfig` comes back exactly as given, and a GET answers exactly
    /// what the create answered. tenant:43: without one, `{state: DISABLED, enabledProviders: []}`.
    @Test("a tenant's mfaConfig is stored as given, and GET answers exactly what create answered")
    func createKeepsMFAConfigAndGetEqualsCreate() async throws {
        try await InProcess.withDirectory { directory in
            let created = try expectOK(
                try await directory.admin.post(
                    directory.tenantsPath,
                    #"{"displayName":"display","allowPasswordSignup":true,"mfaConfig":\#(Self.phone)}"#))
            #expect(created["mfaConfig"] == (try Self.json(Self.phone)))
            let id = try #require(created["tenantId"]?.stringValue)
            #expect(try expectOK(try await directory.admin.get("\(directory.tenantsPath)/\(id)")) == created)

            let plain = try expectOK(try await directory.admin.post(directory.tenantsPath, "{}"))
            #expect(plain["mfaConfig"] == (try Self.json(#"{"state":"DISABLED","enabledProviders":[]}"#)))
            let plainID = try #require(plain["tenantId"]?.stringValue)
            #expect(try expectOK(try await directory.admin.get("\(directory.tenantsPath)/\(plainID)")) == plain)
        }
    }

    /// tenant:292: `state` and `enabledProviders` are optional; a mask path inside a leaf
    /// (`displayName.0`, `mfaConfig.enabledProviders.nonexistentField`) changes nothing.
    @Test("mask paths inside a string or a list change nothing; a partial mfaConfig gets the default state")
    func maskPathsInsideLeavesChangeNothing() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try expectOK(
                try await directory.admin.post(
                    directory.tenantsPath,
                    #"{"displayName":"display","mfaConfig":{"enabledProviders":["PROVIDER_UNSPECIFIED","PHONE_SMS"]}}"#
                ))
            #expect(
                tenant["mfaConfig"]
                    == (try Self.json(
                        #"{"state":"DISABLED","enabledProviders":["PROVIDER_UNSPECIFIED","PHONE_SMS"]}"#)))
            let id = try #require(tenant["tenantId"]?.stringValue)
            let patched = try expectOK(
                try await Self.patch(
                    directory, "\(directory.tenantsPath)/\(id)",
                    mask: "displayName.0,mfaConfig.enabledProviders.nonexistentField",
                    #"{"displayName":"unused","mfaConfig":{"enabledProviders":["PROVIDER_UNSPECIFIED"]}}"#))
            #expect(patched["displayName"]?.stringValue == "display")
            #expect(patched["mfaConfig"] == tenant["mfaConfig"])
        }
    }

    /// tenant:237 (with a mask), tenant:321 (without: a full replace) and tenant:355 (a full
    /// replace with `{}` puts the defaults back).
    @Test("PATCH sets mfaConfig as given, with the mask or as a full replace; {} restores the defaults")
    func patchSetsMFAConfig() async throws {
        try await InProcess.withDirectory { directory in
            let body = """
                {"allowPasswordSignup":true,"disableAuth":false,"displayName":"display","enableAnonymousUser":true,
                 "enableEmailLinkSignin":true,"mfaConfig":\(Self.phone)}
                """
            for mask in [
                "allowPasswordSignup,disableAuth,displayName,enableAnonymousUser,enableEmailLinkSignin,mfaConfig", nil,
            ] {
                let id = try await directory.createTenantID()
                let path = "\(directory.tenantsPath)/\(id)"
                let patched = try expectOK(try await Self.patch(directory, path, mask: mask, body))
                #expect(patched["mfaConfig"] == (try Self.json(Self.phone)), "mask \(mask ?? "none")")
                #expect(patched["displayName"]?.stringValue == "display")
                #expect(patched["enableEmailLinkSignin"]?.boolValue == true)
                #expect(try expectOK(try await directory.admin.get(path)) == patched)
            }

            let id = try await directory.createTenantID(#""mfaConfig":\#(Self.phone)"#)
            let reset = try expectOK(try await Self.patch(directory, "\(directory.tenantsPath)/\(id)", mask: nil, "{}"))
            #expect(reset["mfaConfig"] == (try Self.json(#"{"enabledProviders":[],"state":"DISABLED"}"#)))
            for name in ["allowPasswordSignup", "disableAuth", "enableAnonymousUser", "enableEmailLinkSignin"] {
                #expect(reset[name]?.boolValue == false, "\(name): \(reset)")
            }
        }
    }

    /// tenant:274: a field named in the mask but absent from the body is cleared (AIP-134).
    @Test("updateMask=displayName with {} clears the display name")
    func maskedAbsentDisplayNameIsCleared() async throws {
        try await InProcess.withDirectory { directory in
            let id = try await directory.createTenantID()
            let path = "\(directory.tenantsPath)/\(id)"
            let patched = try expectOK(try await Self.patch(directory, path, mask: "displayName", "{}"))
            #expect(patched["displayName"] == nil, "\(patched)")
            #expect(try expectOK(try await directory.admin.get(path))["displayName"] == nil)
        }
    }

    /// tenant:175 and tenant:205: a full page has a `nextPageToken` even when nothing follows; the
    /// page after it is empty and has none.
    @Test("a full page of tenants always has a nextPageToken")
    func fullPageHasToken() async throws {
        try await InProcess.withDirectory { directory in
            let ids = [try await directory.createTenantID(), try await directory.createTenantID()].sorted()
            let first = try expectOK(try await directory.admin.get("\(directory.tenantsPath)?pageSize=1"))
            #expect(first["tenants"]?[0]?["tenantId"]?.stringValue == ids[0])
            #expect(first["nextPageToken"]?.stringValue?.isEmpty == false)

            let full = try expectOK(try await directory.admin.get("\(directory.tenantsPath)?pageSize=2"))
            #expect((full["tenants"]?.arrayValue ?? []).compactMap { $0["tenantId"]?.stringValue } == ids)
            let token = try #require(full["nextPageToken"]?.stringValue)
            let after = try expectOK(try await directory.admin.get("\(directory.tenantsPath)?pageToken=\(token)"))
            #expect((after["tenants"]?.arrayValue ?? []).isEmpty && after["nextPageToken"] == nil, "\(after)")

            let all = try expectOK(try await directory.admin.get(directory.tenantsPath))
            #expect(all["tenants"]?.arrayValue?.count == 2 && all["nextPageToken"] == nil, "\(all)")
        }
    }

    /// config:28: a mask path the resource does not have changes nothing and is no error; the same
    /// holds for a tenant.
    @Test("an unknown updateMask field changes nothing, on the config and on a tenant")
    func unknownMaskFieldsChangeNothing() async throws {
        try await InProcess.withDirectory { directory in
            let before = try expectOK(try await directory.admin.get(Self.configPath))
            let config = try expectOK(try await Self.patch(directory, Self.configPath, mask: "displayName", "{}"))
            #expect(config["displayName"] == nil)
            #expect(config == before)

            let tenant = try await directory.createTenant()
            let id = try #require(tenant["tenantId"]?.stringValue)
            let patched = try expectOK(
                try await Self.patch(
                    directory, "\(directory.tenantsPath)/\(id)", mask: "nonexistent,signIn.allowDuplicateEmails",
                    #"{"nonexistent":true,"allowPasswordSignup":true}"#))
            #expect(patched["allowPasswordSignup"] == tenant["allowPasswordSignup"])
            #expect(patched["displayName"] == tenant["displayName"])
        }
    }

    /// The project Config's `mfa` (Identity Platform's name; the Admin SDKs send it with
    /// `providerConfigs[].totpProviderConfig`): stored as given, a masked leaf alone changes alone.
    @Test("the project config's mfa is stored as given, and mfa.providerConfigs changes alone")
    func projectConfigMFA() async throws {
        try await InProcess.withDirectory { directory in
            let initial = try expectOK(try await directory.admin.get(Self.configPath))
            #expect(initial["mfa"] == (try Self.json(#"{"state":"DISABLED","enabledProviders":[]}"#)))

            let updated = try expectOK(
                try await Self.patch(
                    directory, Self.configPath, mask: "mfa.state,mfa.enabledProviders,mfa.providerConfigs",
                    #"{"mfa":{"state":"ENABLED","providerConfigs":[{"state":"ENABLED","totpProviderConfig":{"adjacentIntervals":5}}]}}"#
                ))
            #expect(
                updated["mfa"]
                    == (try Self.json(
                        #"{"state":"ENABLED","enabledProviders":[],"providerConfigs":[{"state":"ENABLED","totpProviderConfig":{"adjacentIntervals":5}}]}"#
                    )))
            #expect(try expectOK(try await directory.admin.get(Self.configPath))["mfa"] == updated["mfa"])

            let only = try expectOK(
                try await Self.patch(
                    directory, Self.configPath, mask: "mfa.providerConfigs",
                    #"{"mfa":{"state":"DISABLED","providerConfigs":[]}}"#))
            #expect(only["mfa"]?["state"]?.stringValue == "ENABLED")
            #expect(only["mfa"]?["providerConfigs"]?.arrayValue?.isEmpty == true)
        }
    }

    /// Values outside the enums are refused as Google's JSON parser refuses them
    /// (`INVALID_ARGUMENT`), a TOTP window beyond 0–10 as `INVALID_CONFIG`; nothing is created or changed.
    @Test("an mfaConfig with unknown enum values or a TOTP window beyond 10 is refused and changes nothing")
    func invalidMFAConfigIsRefused() async throws {
        try await InProcess.withDirectory { directory in
            let id = try await directory.createTenantID()
            let path = "\(directory.tenantsPath)/\(id)"
            let before = try expectOK(try await directory.admin.get(path))
            let configBefore = try expectOK(try await directory.admin.get(Self.configPath))
            for bad in [
                #"{"state":"ON"}"#, #"{"enabledProviders":["PHONE_SMS","EMAIL"]}"#,
                #"{"providerConfigs":[{"state":"SOMETIMES"}]}"#,
            ] {
                for answer in [
                    try await directory.admin.post(directory.tenantsPath, #"{"mfaConfig":\#(bad)}"#),
                    try await Self.patch(directory, path, mask: "mfaConfig", #"{"mfaConfig":\#(bad)}"#),
                    try await Self.patch(directory, Self.configPath, mask: "mfa", #"{"mfa":\#(bad)}"#),
                ] {
                    let error = try expectErrorShape(answer, .badRequest)
                    #expect(error["status"]?.stringValue == "INVALID_ARGUMENT", "\(bad): \(answer)")
                }
            }
            let wide = #"{"providerConfigs":[{"state":"ENABLED","totpProviderConfig":{"adjacentIntervals":11}}]}"#
            try expectError(
                try await directory.admin.post(directory.tenantsPath, #"{"mfaConfig":\#(wide)}"#), "INVALID_CONFIG")
            try expectError(
                try await Self.patch(directory, path, mask: nil, #"{"mfaConfig":\#(wide)}"#), "INVALID_CONFIG")
            try expectError(
                try await Self.patch(directory, Self.configPath, mask: nil, #"{"mfa":\#(wide)}"#), "INVALID_CONFIG")

            #expect(try expectOK(try await directory.admin.get(path)) == before)
            #expect(try expectOK(try await directory.admin.get(Self.configPath)) == configBefore)
            let listed = try expectOK(try await directory.admin.get(directory.tenantsPath))
            #expect(listed["tenants"]?.arrayValue?.count == 1, "a refused create made a tenant: \(listed)")
        }
    }
}
