import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// Admin user management and import through the directory's router (docs/protocol/admin.md#admin-endpoints,
/// docs/protocol/accounts.md#the-user-record).
@Suite("in-process: admin accounts and import", .enabled(if: PostgresSupport.available))
struct InProcessAdminAccountsTests {
    @Test("an admin creates, looks up, updates and deletes a user, and each step's errors are business errors")
    func createLookupUpdateDelete() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenantID(#""allowPasswordSignup":true"#)
            let admin = directory.admin
            let email = InProcess.uniqueEmail("admin")
            let created = try expectOK(
                try await admin.post(
                    "/v1/projects/\(InProcess.projectID)/tenants/\(tenant)/accounts",
                    #"{"email":"\#(email.uppercased())","password":"secret12","displayName":"Ada"}"#))
            #expect(created["kind"]?.stringValue == Kind.signUp)
            #expect(created["email"]?.stringValue == email && created["displayName"]?.stringValue == "Ada")
            let localID = try #require(created["localId"]?.stringValue)

            let byEmail = try expectOK(
                try await admin.post(directory.accountsPath(tenant, "lookup"), #"{"email":["\#(email)"]}"#))
            #expect(byEmail["users"]?.arrayValue?.count == 1)
            let user = try #require(try await directory.lookupUsers(tenant, [localID]).first)
            #expect(user["email"]?.stringValue == email && user["emailVerified"]?.boolValue == false)
            #expect(user["tenantId"]?.stringValue == tenant)
            #expect(user["providerUserInfo"]?[0]?["providerId"]?.stringValue == "password")
            #expect(user["disabled"]?.boolValue != true)

            // The same email again, an invalid one, a chosen localId that is taken.
            let accounts = "/v1/projects/\(InProcess.projectID)/tenants/\(tenant)/accounts"
            try expectError(try await admin.post(accounts, #"{"email":"\#(email)"}"#), "EMAIL_EXISTS")
            try expectError(try await admin.post(accounts, #"{"email":"not-an-email"}"#), "INVALID_EMAIL")
            try expectError(try await admin.post(accounts, #"{"localId":"\#(localID)"}"#), "DUPLICATE_LOCAL_ID")

            let update = directory.accountsPath(tenant, "update")
            let updated = try expectOK(
                try await admin.post(
                    update, #"{"localId":"\#(localID)","displayName":"Grace","disableUser":true,"emailVerified":true}"#)
            )
            #expect(updated["kind"]?.stringValue == Kind.update && updated["localId"]?.stringValue == localID)
            let changed = try #require(try await directory.lookupUsers(tenant, [localID]).first)
            #expect(changed["displayName"]?.stringValue == "Grace")
            #expect(changed["disabled"]?.boolValue == true && changed["emailVerified"]?.boolValue == true)
            try expectOK(try await admin.post(update, #"{"localId":"\#(localID)","deleteAttribute":["DISPLAY_NAME"]}"#))
            #expect(try await directory.lookupUsers(tenant, [localID]).first?["displayName"] == nil)
            try expectStatusError(
                try await admin.post(update, #"{"localId":"\#(localID)","deleteAttribute":["NICKNAME"]}"#),
                .badRequest, "INVALID_ARGUMENT")
            try expectError(try await admin.post(update, #"{"localId":"no-such-user"}"#), "USER_NOT_FOUND")
            try expectError(try await admin.post(update, #"{"displayName":"x"}"#), "MISSING_LOCAL_ID")

            let delete = directory.accountsPath(tenant, "delete")
            let deleted = try expectOK(try await admin.post(delete, #"{"localId":"\#(localID)"}"#))
            #expect(deleted["kind"]?.stringValue == Kind.delete)
            #expect(try await directory.lookupUsers(tenant, [localID]).isEmpty)
            try expectError(try await admin.post(delete, #"{"localId":"\#(localID)"}"#), "USER_NOT_FOUND")
            try expectError(try await admin.post(delete, "{}"), "MISSING_LOCAL_ID")
        }
    }

    @Test("users of one tenant are invisible to another tenant's and the project's admin paths")
    func adminPathsAreTenantScoped() async throws {
        try await InProcess.withDirectory { directory in
            let a = try await directory.createTenantID()
            let b = try await directory.createTenantID()
            let user = try expectOK(
                try await directory.admin.post("/v1/projects/\(InProcess.projectID)/tenants/\(a)/accounts", "{}"))
            let localID = try #require(user["localId"]?.stringValue)
            #expect(try await directory.lookupUsers(b, [localID]).isEmpty)
            #expect(try await directory.lookupUsers(nil, [localID]).isEmpty)
            try expectError(
                try await directory.admin.post(directory.accountsPath(b, "delete"), #"{"localId":"\#(localID)"}"#),
                "USER_NOT_FOUND")
            try expectError(
                try await directory.admin.post(directory.accountsPath(nil, "delete"), #"{"localId":"\#(localID)"}"#),
                "USER_NOT_FOUND")
            // A body tenant that contradicts the path's, and a tenant that does not exist.
            try expectError(
                try await directory.admin.post(
                    directory.accountsPath(a, "lookup"), #"{"tenantId":"\#(b)","localId":["\#(localID)"]}"#),
                "TENANT_ID_MISMATCH")
            try expectError(
                try await directory.admin.post(directory.accountsPath("ghost-tenant", "lookup"), #"{"localId":["x"]}"#),
                "TENANT_NOT_FOUND")
            #expect(try await directory.lookupUsers(a, [localID]).count == 1)
        }
    }

    @Test(
        "an import reports each collision at its own index, keeps the first of a batch, and links providers of created users only"
    )
    func importReportsEachCollision() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenantID(#""allowPasswordSignup":true"#)
            let takenEmail = InProcess.uniqueEmail("taken")
            let phone = "+1555\(Int.random(in: 1_000_000...9_999_999))"
            let existing = try expectOK(
                try await directory.admin.post(
                    "/v1/projects/\(InProcess.projectID)/tenants/\(tenant)/accounts",
                    #"{"email":"\#(takenEmail)","phoneNumber":"\#(phone)"}"#))
            let existingID = try #require(existing["localId"]?.stringValue)
            let shared = InProcess.uniqueEmail("shared")
            let ids = (0..<6).map { _ in "imp-\(Secrets.randomAlphanumeric(10).lowercased())" }
            let google = "g-\(Secrets.randomAlphanumeric(16))"
            let github = "h-\(Secrets.randomAlphanumeric(16))"
            let users = """
                [{"localId":"\(existingID)","email":"\(InProcess.uniqueEmail())"},
                 {"localId":"\(ids[1])","email":"\(takenEmail)"},
                 {"localId":"\(ids[2])","phoneNumber":"\(phone)"},
                 {"localId":"\(ids[3])","email":"\(shared)","displayName":"first",
                  "providerUserInfo":[{"providerId":"google.com","rawId":"\(google)"}]},
                 {"localId":"\(ids[4])","email":"\(shared)","displayName":"second",
                  "providerUserInfo":[{"providerId":"github.com","rawId":"\(github)"}]},
                 {"localId":"\(ids[5])","displayName":"no email"}]
                """
            let answer = try await directory.admin.post(
                directory.accountsPath(tenant, "batchCreate"), #"{"users":\#(users)}"#)
            let body = try expectOK(answer)
            #expect(body["kind"]?.stringValue == "identitytoolkit#UploadAccountResponse")
            let errors = (body["error"]?.arrayValue ?? []).map {
                ($0["index"]?.intValue ?? -1, $0["message"]?.stringValue ?? "")
            }
            let expected: [(Int64, String)] = [
                (0, "localId belongs to an existing account - can not overwrite."),
                (1, "email exists in other account in database"),
                (2, "phone number exists in other account in database"),
                (4, "email exists in other account in database"),
            ]
            #expect(errors.map(\.0) == expected.map(\.0) && errors.map(\.1) == expected.map(\.1), "\(answer)")

            let found = try await directory.lookupUsers(tenant, ids + [existingID])
            let byID = Dictionary(
                uniqueKeysWithValues: found.compactMap { u in u["localId"]?.stringValue.map { ($0, u) } })
            #expect(Set(byID.keys) == [ids[3], ids[5], existingID])
            #expect(
                byID[ids[3]]?["displayName"]?.stringValue == "first" && byID[ids[3]]?["email"]?.stringValue == shared)
            #expect(byID[ids[5]]?["displayName"]?.stringValue == "no email")
            #expect(byID[existingID]?["email"]?.stringValue == takenEmail, "not overwritten")
            let providers = (byID[ids[3]]?["providerUserInfo"]?.arrayValue ?? []).compactMap {
                p -> String? in p["providerId"]?.stringValue == "google.com" ? p["rawId"]?.stringValue : nil
            }
            #expect(providers == [google])

            // The second user's provider was linked to no one.
            let lookup = directory.accountsPath(tenant, "lookup")
            let none = try expectOK(
                try await directory.admin.post(
                    lookup, #"{"federatedUserId":[{"providerId":"github.com","rawId":"\#(github)"}]}"#))
            #expect(none["users"] == nil)
            let linked = try expectOK(
                try await directory.admin.post(
                    lookup, #"{"federatedUserId":[{"providerId":"google.com","rawId":"\#(google)"}]}"#))
            #expect((linked["users"]?.arrayValue ?? []).compactMap { $0["localId"]?.stringValue } == [ids[3]])
        }
    }

    @Test(
        "an import refuses each user with an overlong profile field and imports the others; request errors refuse all")
    func importRefusesOverlongProfileFieldsPerUser() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenantID(#""allowPasswordSignup":true"#)
            let path = directory.accountsPath(tenant, "batchCreate")
            let maxField = 2048
            let ids = (0..<4).map { _ in "bound-\(Secrets.randomAlphanumeric(10).lowercased())" }
            let fields = [
                #""displayName":"fine""#,
                #""displayName":"\#(String(repeating: "n", count: maxField + 1))""#,
                #""photoUrl":"https://example.com/\#(String(repeating: "p", count: maxField + 1 - 20))""#,
                #""displayName":"\#(String(repeating: "n", count: maxField))","photoUrl":"https://example.com/\#(String(repeating: "p", count: maxField - 20))""#,
            ]
            let users = zip(ids, fields).map { id, field in
                #"{"localId":"\#(id)","email":"\#(InProcess.uniqueEmail("batch"))",\#(field)}"#
            }
            let answer = try await directory.admin.post(path, #"{"users":[\#(users.joined(separator: ","))]}"#)
            let errors = try expectOK(answer)["error"]?.arrayValue ?? []
            #expect(errors.compactMap { $0["index"]?.intValue }.sorted() == [1, 2], "\(answer)")
            let found = try await directory.lookupUsers(tenant, ids).compactMap { $0["localId"]?.stringValue }
            #expect(found.sorted() == [ids[0], ids[3]].sorted(), "the refused users are not created")

            // Whole-request errors create nobody.
            try expectError(try await directory.admin.post(path, #"{"users":[]}"#), "MISSING_USER_ACCOUNT")
            let again = "imp-\(Secrets.randomAlphanumeric(8).lowercased())"
            try expectError(
                try await directory.admin.post(path, #"{"users":[{"localId":"\#(again)"},{"localId":"\#(again)"}]}"#),
                "DUPLICATE_LOCAL_ID")
            try expectError(
                try await directory.admin.post(path, #"{"hashAlgorithm":"ROT13","users":[{"localId":"\#(again)"}]}"#),
                "INVALID_HASH_ALGORITHM")
            #expect(try await directory.lookupUsers(tenant, [again]).isEmpty)
        }
    }
}
