import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// The admin audit log and the paged credential lists (issue #4; docs/protocol/admin.md#tesseras-own-admin-resources;
/// Tests/stack/test_admin_credentials.py).
@Suite("in-process: admin audit log and credential lists", .enabled(if: PostgresSupport.available))
struct InProcessAuditTests {
    static func entries(_ page: JSONValue) -> [JSONValue] { page["entries"]?.arrayValue ?? [] }

    @Test("every successful admin write is in the audit log with its actor, action template, target and request id")
    func everyAdminWriteIsInTheAuditLog() async throws {
        try await InProcess.withDirectory { directory in
            let p = InProcess.projectID
            let tenant = try await directory.createTenantID()
            let created = try expectOK(
                try await directory.admin.post("/v2/projects/\(p)/tenants/\(tenant)/adminCredentials", "{}"))
            let secret = try #require(created["secret"]?.stringValue)
            let credentialID = try #require(created["credentialId"]?.stringValue)
            let scoped = directory.http.bearer(secret)
            let user = try expectOK(
                try await scoped.post(
                    "/v1/projects/\(p)/tenants/\(tenant)/accounts", #"{"displayName":"Audited"}"#,
                    headers: [.requestID: "audit-check-1"]))
            let localID = try #require(user["localId"]?.stringValue)
            try expectOK(
                try await scoped.post(
                    directory.accountsPath(tenant, "update"), #"{"localId":"\#(localID)","disableUser":true}"#))
            try expectOK(try await scoped.post(directory.accountsPath(tenant, "delete"), #"{"localId":"\#(localID)"}"#))
            // Reads sent as POSTs (a lookup, a query) change nothing and are not written down.
            try expectOK(
                try await scoped.post(directory.accountsPath(tenant, "lookup"), #"{"localId":["\#(localID)"]}"#))
            try expectOK(try await scoped.post(directory.accountsPath(tenant, "query"), #"{"returnUserInfo":false}"#))
            // A refused call changes nothing and is not a write.
            try expectError(
                try await scoped.post(directory.accountsPath(tenant, "delete"), #"{"localId":"\#(localID)"}"#),
                "USER_NOT_FOUND")

            let log = "/v2/projects/\(p)/tenants/\(tenant)/auditLog"
            let page = try expectOK(try await scoped.get("\(log)?pageSize=2"))
            #expect(Self.entries(page).count == 2)
            let token = try #require(page["nextPageToken"]?.stringValue)
            let rest = try expectOK(try await scoped.get("\(log)?pageToken=\(token)"))
            let all = Self.entries(page) + Self.entries(rest)
            let mine = all.filter { $0["actor"]?.stringValue == credentialID }
            #expect(
                mine.compactMap { $0["action"]?.stringValue } == [
                    "POST /v1/projects/{project}/tenants/{tenant}/accounts:delete",
                    "POST /v1/projects/{project}/tenants/{tenant}/accounts:update",
                    "POST /v1/projects/{project}/tenants/{tenant}/accounts",
                ], "\(mine)")
            #expect(
                mine.allSatisfy {
                    $0["target"]?.stringValue == "user:\(localID)"
                        || $0["action"]?.stringValue?.hasSuffix("/accounts") == true
                })
            #expect(mine.last?["requestId"]?.stringValue == "audit-check-1")
            #expect(mine.last?["tenantId"]?.stringValue == tenant)
            #expect(!all.contains { "\($0)".contains(secret) }, "the secret is never logged")
            // The bootstrap admin's own writes carry its id, never the secret.
            #expect(all.contains { $0["actor"]?.stringValue == "bootstrap" })
        }
    }

    @Test("a tenant's deletion is the project's audit entry, and the tenant's own log goes with it")
    func tenantDeletionIsInTheProjectAuditLog() async throws {
        try await InProcess.withDirectory { directory in
            let p = InProcess.projectID
            let tenant = try await directory.createTenantID()
            try expectOK(
                try await directory.admin.post("/v1/projects/\(p)/tenants/\(tenant)/accounts", #"{"displayName":"x"}"#))
            let own = try expectOK(try await directory.admin.get("/v2/projects/\(p)/tenants/\(tenant)/auditLog"))
            #expect(!Self.entries(own).isEmpty)
            try expectOK(
                try await directory.admin.request(
                    .delete, "/v2/projects/\(p)/tenants/\(tenant)", headers: [.requestID: "audit-tenant-deletion"]))

            let project = try expectOK(try await directory.admin.get("/v2/projects/\(p)/auditLog?pageSize=20"))
            let deletion = Self.entries(project).filter { $0["requestId"]?.stringValue == "audit-tenant-deletion" }
            #expect(deletion.count == 1, "\(project)")
            #expect(deletion.first?["action"]?.stringValue == "DELETE /v2/projects/{project}/tenants/{tenant}")
            #expect(deletion.first?["target"]?.stringValue == "/v2/projects/\(p)/tenants/\(tenant)")
            #expect(deletion.first?["actor"]?.stringValue == "bootstrap" && deletion.first?["tenantId"] == nil)
            try expectError(
                try await directory.admin.get("/v2/projects/\(p)/tenants/\(tenant)/auditLog"), "TENANT_NOT_FOUND")
        }
    }

    @Test("credential and service-account lists are paged, every entry once, the last page without a token")
    func credentialAndServiceAccountListsArePaged() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenantID()
            for (collection, idField) in [("adminCredentials", "credentialId"), ("serviceAccounts", "accountId")] {
                let path = "/v2/projects/\(InProcess.projectID)/tenants/\(tenant)/\(collection)"
                var made: Set<String> = []
                for n in 0..<3 {
                    let created = try expectOK(try await directory.admin.post(path, #"{"displayName":"page-\#(n)"}"#))
                    made.insert(try #require(created[idField]?.stringValue))
                }
                let first = try expectOK(try await directory.admin.get("\(path)?pageSize=2"))
                let firstRows = first[collection]?.arrayValue ?? []
                let token = try #require(first["nextPageToken"]?.stringValue)
                #expect(firstRows.count == 2)
                let second = try expectOK(try await directory.admin.get("\(path)?pageSize=2&pageToken=\(token)"))
                let secondRows = second[collection]?.arrayValue ?? []
                #expect(secondRows.count == 1 && second["nextPageToken"] == nil, "\(second)")
                #expect(Set((firstRows + secondRows).compactMap { $0[idField]?.stringValue }) == made)
                let all = try expectOK(try await directory.admin.get(path))
                #expect(all[collection]?.arrayValue?.count == 3, "the default page holds them all")
            }
        }
    }
}
