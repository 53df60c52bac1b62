import Testing

@testable import TesseraShared
@testable import UserDirectory

@Suite("user-directory logic")
struct DirectoryUnitTests {
    @Test("update masks expand parents to leaves and refuse unknown paths")
    func updateMasks() throws {
        let known = Array(TenantWire.fields.keys)
        #expect(
            try UpdateMask.resolve("client.permissions", known: known)
                == ["client.permissions.disabledUserDeletion", "client.permissions.disabledUserSignup"])
        #expect(
            try UpdateMask.resolve("enableAnonymousUser, displayName", known: known) == [
                "enableAnonymousUser", "displayName",
            ])
        #expect(throws: FirebaseError.self) { try UpdateMask.resolve("nonsense", known: known) }
        #expect(throws: FirebaseError.self) { try UpdateMask.resolve("client.perm", known: known) }
    }

    @Test("a masked field absent from the body is reset; unlisted fields are kept")
    func maskSemantics() throws {
        var settings = ScopeSettings(tenantId: "t", displayName: "Tenant", enableAnonymousUser: true, disableAuth: true)
        let input = TenantWire(ScopeSettings(tenantId: "x", disabledUserSignup: true), projectID: "p")
        var partial = input
        partial.enableAnonymousUser = nil
        for path in try UpdateMask.resolve(
            "enableAnonymousUser,client.permissions.disabledUserSignup", known: TenantWire.fields.keys)
        {
            TenantWire.fields[path]?(&settings, partial)
        }
        #expect(!settings.enableAnonymousUser && settings.disabledUserSignup && settings.disableAuth)
    }

    @Test("tenant display names follow the Identity Platform rule")
    func displayNames() {
        for good in ["abcd", "Tenant-1", "a2345678901234567890"] {
            #expect(throws: Never.self) { try TenantController<PostgresTenantRepository>.validateDisplayName(good) }
        }
        for bad in ["abc", "1abc", "a_bc", "a bcd", "a23456789012345678901", "ténant"] {
            #expect(throws: FirebaseError.self) {
                try TenantController<PostgresTenantRepository>.validateDisplayName(bad)
            }
        }
        let id = TenantController<PostgresTenantRepository>.newTenantID(displayName: "My-Tenant")
        #expect(id.hasPrefix("my-tenant-") && id.count == "my-tenant-".count + 5)
    }
}
