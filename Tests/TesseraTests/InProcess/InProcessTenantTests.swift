import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// The v2 tenant admin API through the directory's router (Tests/stack/test_tenants.py).
@Suite("in-process: tenant administration", .enabled(if: PostgresSupport.available))
struct InProcessTenantTests {
    static let tenantFields = [
        "name", "tenantId", "displayName", "allowPasswordSignup", "enableEmailLinkSignin", "enableAnonymousUser",
        "disableAuth", "autodeleteAnonymousUsers", "client", "mfaConfig",
    ]

    static func checkShape(_ tenant: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for name in tenantFields {
            #expect(tenant[name] != nil, "tenant lacks \(name): \(tenant)", sourceLocation: sourceLocation)
        }
        let id = try #require(tenant["tenantId"]?.stringValue, sourceLocation: sourceLocation)
        #expect(
            tenant["name"]?.stringValue == "projects/\(InProcess.projectID)/tenants/\(id)",
            sourceLocation: sourceLocation)
        let permissions = try #require(tenant["client"]?["permissions"]?.objectValue, sourceLocation: sourceLocation)
        #expect(
            permissions["disabledUserSignup"] != nil && permissions["disabledUserDeletion"] != nil,
            sourceLocation: sourceLocation)
        #expect(tenant["mfaConfig"]?["state"]?.stringValue == "DISABLED", sourceLocation: sourceLocation)
        let providers = tenant["mfaConfig"]?["enabledProviders"]?.arrayValue ?? []
        #expect(providers.isEmpty, sourceLocation: sourceLocation)
    }

    /// The settings conftest's `settings()` compares, absent booleans read as false.
    struct Settings: Equatable, CustomStringConvertible {
        var displayName: String?
        var allowPasswordSignup = false
        var enableAnonymousUser = false
        var disableAuth = false
        var autodeleteAnonymousUsers = false
        var disabledUserSignup = false
        var disabledUserDeletion = false

        init(
            displayName: String?, allowPasswordSignup: Bool = false, enableAnonymousUser: Bool = false,
            disableAuth: Bool = false, autodeleteAnonymousUsers: Bool = false, disabledUserSignup: Bool = false,
            disabledUserDeletion: Bool = false
        ) {
            self.displayName = displayName
            self.allowPasswordSignup = allowPasswordSignup
            self.enableAnonymousUser = enableAnonymousUser
            self.disableAuth = disableAuth
            self.autodeleteAnonymousUsers = autodeleteAnonymousUsers
            self.disabledUserSignup = disabledUserSignup
            self.disabledUserDeletion = disabledUserDeletion
        }

        init(_ tenant: JSONValue) {
            let permissions = tenant["client"]?["permissions"]
            self.init(
                displayName: tenant["displayName"]?.stringValue,
                allowPasswordSignup: tenant["allowPasswordSignup"]?.boolValue ?? false,
                enableAnonymousUser: tenant["enableAnonymousUser"]?.boolValue ?? false,
                disableAuth: tenant["disableAuth"]?.boolValue ?? false,
                autodeleteAnonymousUsers: tenant["autodeleteAnonymousUsers"]?.boolValue ?? false,
                disabledUserSignup: permissions?["disabledUserSignup"]?.boolValue ?? false,
                disabledUserDeletion: permissions?["disabledUserDeletion"]?.boolValue ?? false)
        }

        var description: String {
            "\(displayName ?? "nil") password=\(allowPasswordSignup) anonymous=\(enableAnonymousUser) "
                + "disableAuth=\(disableAuth) autodelete=\(autodeleteAnonymousUsers) "
                + "noSignup=\(disabledUserSignup) noDeletion=\(disabledUserDeletion)"
        }
    }

    @Test("a created tenant has the full shape and reads back as created, also under the Google host prefix")
    func createAndGet() async throws {
        try await InProcess.withDirectory { directory in
            let name = InProcess.uniqueName("crud")
            let created = try await directory.createTenant(#""displayName":"\#(name)","allowPasswordSignup":true"#)
            try Self.checkShape(created)
            #expect(
                Settings(created)
                    == Settings(displayName: name, allowPasswordSignup: true, enableAnonymousUser: true))
            #expect(created["enableEmailLinkSignin"]?.boolValue == false)
            let id = try #require(created["tenantId"]?.stringValue)

            let fetched = try expectOK(try await directory.admin.get("\(directory.tenantsPath)/\(id)"))
            try Self.checkShape(fetched)
            // Both carry the read-only hash config for admins (docs/protocol/accounts.md#firebase-scrypt); a
            // GET answers what the create did.
            #expect(fetched["hashConfig"]?["algorithm"]?.stringValue == "SCRYPT")
            #expect(fetched == created)

            let prefixed = try await directory.admin.get(
                "/identitytoolkit.googleapis.com\(directory.tenantsPath)/\(id)")
            #expect(try expectOK(prefixed)["tenantId"]?.stringValue == id)
        }
    }

    @Test("a tenant created with a display name only has every setting off")
    func defaultsAreOff() async throws {
        try await InProcess.withDirectory { directory in
            let name = InProcess.uniqueName("dflt")
            let tenant = try expectOK(
                try await directory.admin.post(directory.tenantsPath, #"{"displayName":"\#(name)"}"#))
            try Self.checkShape(tenant)
            #expect(Settings(tenant) == Settings(displayName: name), "defaults must be false: \(tenant)")
        }
    }

    @Test("tenants list page by page in tenantId order, each once")
    func listPagesInTenantIDOrder() async throws {
        try await InProcess.withDirectory { directory in
            var ours: Set<String> = []
            for _ in 0..<3 { ours.insert(try await directory.createTenantID()) }
            var seen: [String] = []
            var token: String?
            var pages = 0
            repeat {
                pages += 1
                try #require(pages < 20, "paging does not terminate")
                let query = "pageSize=1" + (token.map { "&pageToken=\($0)" } ?? "")
                let page = try expectOK(try await directory.admin.get("\(directory.tenantsPath)?\(query)"))
                let tenants = page["tenants"]?.arrayValue ?? []
                #expect(tenants.count <= 1)
                for tenant in tenants { try Self.checkShape(tenant) }
                seen += tenants.compactMap { $0["tenantId"]?.stringValue }
                token = page["nextPageToken"]?.stringValue
            } while token?.isEmpty == false
            #expect(seen.count == Set(seen).count, "a tenant was listed twice: \(seen)")
            #expect(seen == seen.sorted(), "tenants are not sorted by tenantId")
            #expect(ours.isSubset(of: Set(seen)))

            let full = try expectOK(try await directory.admin.get("\(directory.tenantsPath)?pageSize=1000"))
            #expect(Set((full["tenants"]?.arrayValue ?? []).compactMap { $0["tenantId"]?.stringValue }) == ours)
            #expect(full["nextPageToken"] == nil)
        }
    }

    @Test("a PATCH with updateMask changes only the listed fields")
    func patchWithMask() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenant()
            let id = try #require(tenant["tenantId"]?.stringValue)
            let newName = InProcess.uniqueName("renamed")
            let body = """
                {"displayName":"\(newName)","allowPasswordSignup":true,"enableAnonymousUser":false,"disableAuth":true,
                 "client":{"permissions":{"disabledUserDeletion":true,"disabledUserSignup":true}}}
                """
            let path = "\(directory.tenantsPath)/\(id)?updateMask=displayName,client.permissions.disabledUserDeletion"
            let patched = try expectOK(try await directory.admin.request(.patch, path, body: body))
            var expected = Settings(tenant)
            expected.displayName = newName
            expected.disabledUserDeletion = true
            #expect(Settings(patched) == expected)
            #expect(patched["tenantId"] == tenant["tenantId"] && patched["name"] == tenant["name"])
            #expect(Settings(try expectOK(try await directory.admin.get("\(directory.tenantsPath)/\(id)"))) == expected)
        }
    }

    /// The admin middleware resolves the path's tenant before the handler runs; a PATCH still answers its
    /// body's error before a missing tenant's, and a well-formed one of a missing tenant is not found.
    @Test("a PATCH of a missing tenant answers its body's error first, then TENANT_NOT_FOUND")
    func patchOfMissingTenant() async throws {
        try await InProcess.withDirectory { directory in
            let path = "\(directory.tenantsPath)/missing-\(InProcess.uniqueName("t"))?updateMask=displayName"
            try expectError(
                try await directory.admin.request(.patch, path, body: #"{"displayName":"1 bad name"}"#),
                "INVALID_ARGUMENT")
            try expectError(
                try await directory.admin.request(.patch, path, body: #"{"displayName":"good-name"}"#),
                "TENANT_NOT_FOUND")
            try expectError(
                try await directory.admin.request(.delete, "\(directory.tenantsPath)/missing-gone"), "TENANT_NOT_FOUND")
        }
    }

    @Test("a PATCH without a mask replaces the whole tenant")
    func patchWithoutMaskReplaces() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenant()
            let id = try #require(tenant["tenantId"]?.stringValue)
            let newName = InProcess.uniqueName("full")
            let patched = try expectOK(
                try await directory.admin.request(
                    .patch, "\(directory.tenantsPath)/\(id)",
                    body: #"{"displayName":"\#(newName)","allowPasswordSignup":true}"#))
            #expect(Settings(patched) == Settings(displayName: newName, allowPasswordSignup: true))
            #expect(patched["tenantId"] == tenant["tenantId"] && patched["name"] == tenant["name"])
            let fetched = try expectOK(try await directory.admin.get("\(directory.tenantsPath)/\(id)"))
            #expect(Settings(fetched) == Settings(patched))
        }
    }
}
