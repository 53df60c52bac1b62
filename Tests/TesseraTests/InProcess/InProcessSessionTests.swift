import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// Anonymous sessions end to end: the token service's router in front of a live directory
/// (Tests/stack/test_accounts.py, test_tenants.py, test_admin_query.py).
@Suite("in-process: anonymous sessions, lookup and delete", .enabled(if: PostgresSupport.available))
struct InProcessSessionTests {
    static func checkAnonymousUser(
        _ user: JSONValue, localID: String, tenant: String?, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let now = Date().timeIntervalSince1970
        #expect(user["localId"]?.stringValue == localID, "\(user)", sourceLocation: sourceLocation)
        #expect(user["tenantId"]?.stringValue == tenant, "\(user)", sourceLocation: sourceLocation)
        for name in ["createdAt", "lastLoginAt"] {
            let millis = user[name]?.stringValue.flatMap { Double($0) }
            #expect(millis.map { abs($0 / 1000 - now) < 300 } == true, "\(name) not a recent ms string: \(user)")
        }
        let refreshed = user["lastRefreshAt"]?.stringValue ?? ""
        #expect(
            refreshed.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/) != nil,
            "lastRefreshAt not RFC 3339: \(user)", sourceLocation: sourceLocation)
        if let validSince = user["validSince"] {
            #expect(validSince.stringValue?.allSatisfy(\.isNumber) == true, sourceLocation: sourceLocation)
        }
        let providers = user["providerUserInfo"]?.arrayValue ?? []
        #expect(providers.isEmpty, sourceLocation: sourceLocation)
        #expect(user["email"] == nil && user["passwordHash"] == nil, sourceLocation: sourceLocation)
        #expect(user["disabled"]?.boolValue != true, sourceLocation: sourceLocation)
    }

    static func rfc3339(_ text: String?) throws -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        let text = try #require(text)
        return try #require(formatter.date(from: text) ?? plain.date(from: text))
    }

    @Test("an anonymous user looks itself up by ID token, on both path forms, and the admin API sees the same record")
    func lookupByIDTokenReturnsTheAnonymousUser() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let session = try await service.signUpAnonymous(tenant)
            let data = try expectOK(try await service.lookup(session.idToken, tenant: tenant))
            #expect(data["kind"]?.stringValue == Kind.lookup)
            #expect(data["users"]?.arrayValue?.count == 1)
            let user = try #require(data["users"]?[0])
            Self.checkAnonymousUser(user, localID: session.localId, tenant: tenant)

            // Without tenantId the token's own tenant is used; the prefixed path and the header key work too.
            let inHeader = try await service.client.key(nil).post(
                "/identitytoolkit.googleapis.com/v1/accounts:lookup", #"{"idToken":"\#(session.idToken)"}"#,
                headers: [.googAPIKey: InProcess.apiKey])
            #expect(try expectOK(inHeader)["users"]?[0]?["localId"]?.stringValue == session.localId)

            // A refresh moves lastRefreshAt forward.
            let refreshed = try await service.refresh(session.refreshToken)
            let after = try #require(
                try expectOK(try await service.lookup(refreshed["id_token"]?.stringValue, tenant: tenant))["users"]?[0])
            #expect(
                try Self.rfc3339(after["lastRefreshAt"]?.stringValue)
                    >= Self.rfc3339(user["lastRefreshAt"]?.stringValue))
            #expect(after["createdAt"] == user["createdAt"])

            let users = try await service.directory.lookupUsers(tenant, [session.localId])
            #expect(users.count == 1)
            Self.checkAnonymousUser(try #require(users.first), localID: session.localId, tenant: tenant)
        }
    }

    @Test("lookup and delete need an ID token; a client cannot delete by localId alone")
    func lookupAndDeleteRequireAnIDToken() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            try expectError(try await service.lookup(nil, tenant: tenant), "MISSING_ID_TOKEN")
            try expectError(try await service.delete(nil, tenant: tenant), "MISSING_ID_TOKEN")
            let session = try await service.signUpAnonymous(tenant)
            try expectError(
                try await service.client.post(
                    "/v1/accounts:delete", #"{"localId":"\#(session.localId)","tenantId":"\#(tenant)"}"#),
                "MISSING_ID_TOKEN")
            try expectOK(try await service.lookup(session.idToken, tenant: tenant))
        }
    }

    @Test("delete by ID token removes that user and its sessions, and only that user")
    func deleteByIDTokenRemovesTheUserAndItsSessions() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let session = try await service.signUpAnonymous(tenant)
            let other = try await service.signUpAnonymous(tenant)
            let data = try expectOK(try await service.delete(session.idToken, tenant: tenant))
            #expect(data["kind"]?.stringValue == Kind.delete)

            try expectError(try await service.lookup(session.idToken, tenant: tenant), "USER_NOT_FOUND")
            #expect(try await service.directory.lookupUsers(tenant, [session.localId]).isEmpty)
            try expectError(
                try await service.refreshRaw(session.refreshToken), "USER_NOT_FOUND", "INVALID_REFRESH_TOKEN")
            try expectError(try await service.delete(session.idToken, tenant: tenant), "USER_NOT_FOUND")

            let others = try await service.directory.lookupUsers(tenant, [other.localId])
            #expect(others.compactMap { $0["localId"]?.stringValue } == [other.localId])
            try expectOK(try await service.lookup(other.idToken, tenant: tenant))
        }
    }

    @Test("delete works on the Google-prefixed path, the tenant taken from the token")
    func deleteWorksWithPrefixedPath() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let session = try await service.signUpAnonymous(tenant)
            let data = try expectOK(
                try await service.delete(session.idToken, prefix: "/identitytoolkit.googleapis.com"))
            #expect(data["kind"]?.stringValue == Kind.delete)
            #expect(try await service.directory.lookupUsers(tenant, [session.localId]).isEmpty)
        }
    }

    @Test("the admin API looks users up and deletes them by localId; no match is a 200 without users")
    func adminLookupAndDeleteByLocalID() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenant = try await directory.createTenantID()
            let s1 = try await service.signUpAnonymous(tenant)
            let s2 = try await service.signUpAnonymous(tenant)
            let users = try await directory.lookupUsers(tenant, [s1.localId, s2.localId, "no-such-user-0000"])
            #expect(users.compactMap { $0["localId"]?.stringValue }.sorted() == [s1.localId, s2.localId].sorted())

            let none = try expectOK(
                try await directory.admin.post(
                    directory.accountsPath(tenant, "lookup"), #"{"localId":["no-such-user-0000"]}"#))
            #expect(none["kind"]?.stringValue == Kind.lookup && none["users"] == nil)

            let deleted = try expectOK(
                try await directory.admin.post(
                    directory.accountsPath(tenant, "delete"), #"{"localId":"\#(s1.localId)"}"#))
            #expect(deleted["kind"]?.stringValue == Kind.delete)
            let left = try await directory.lookupUsers(tenant, [s1.localId, s2.localId])
            #expect(left.compactMap { $0["localId"]?.stringValue } == [s2.localId])
            try expectError(
                try await directory.admin.post(
                    directory.accountsPath(tenant, "delete"), #"{"localId":"\#(s1.localId)"}"#),
                "USER_NOT_FOUND")
            try expectError(try await service.lookup(s1.idToken, tenant: tenant), "USER_NOT_FOUND")

            let prefixed = try expectOK(
                try await directory.admin.post(
                    "/identitytoolkit.googleapis.com\(directory.accountsPath(tenant, "lookup"))",
                    #"{"localId":["\#(s2.localId)"]}"#))
            #expect((prefixed["users"]?.arrayValue ?? []).compactMap { $0["localId"]?.stringValue } == [s2.localId])
        }
    }

    @Test("tokens and users do not cross tenants, and a refresh keeps its tenant")
    func tokensAndUsersDoNotCrossTenants() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenantA = try await directory.createTenantID()
            let tenantB = try await directory.createTenantID()
            let a = try await service.signUpAnonymous(tenantA)
            let b = try await service.signUpAnonymous(tenantB)

            try expectError(try await service.lookup(a.idToken, tenant: tenantB), "TENANT_ID_MISMATCH")
            try expectError(try await service.delete(a.idToken, tenant: tenantB), "TENANT_ID_MISMATCH")
            #expect(try await directory.lookupUsers(tenantA, [a.localId]).count == 1)

            #expect(try await directory.lookupUsers(tenantB, [a.localId]).isEmpty)
            #expect(try await directory.lookupUsers(nil, [a.localId, b.localId]).isEmpty)
            try expectError(
                try await directory.admin.post(
                    directory.accountsPath(tenantB, "delete"), #"{"localId":"\#(a.localId)"}"#),
                "USER_NOT_FOUND")
            try expectError(
                try await directory.admin.post(directory.accountsPath(nil, "delete"), #"{"localId":"\#(a.localId)"}"#),
                "USER_NOT_FOUND")
            #expect(try await directory.lookupUsers(tenantA, [a.localId]).count == 1)
            let inB = try await directory.lookupUsers(tenantB, [a.localId, b.localId])
            #expect(inB.compactMap { $0["localId"]?.stringValue } == [b.localId])

            let data = try await service.refresh(a.refreshToken)
            let refreshed = try service.verify(data["id_token"]?.stringValue)
            #expect(refreshed["firebase"]?["tenant"]?.stringValue == tenantA)
            #expect(refreshed["sub"]?.stringValue == a.localId)
            try expectError(
                try await service.lookup(data["id_token"]?.stringValue, tenant: tenantB), "TENANT_ID_MISMATCH")
            let user = try expectOK(try await service.lookup(data["id_token"]?.stringValue))["users"]?[0]
            #expect(user?["tenantId"]?.stringValue == tenantA)

            #expect(try claims(b.idToken)["firebase"]?["tenant"]?.stringValue == tenantB)
            try expectOK(try await service.lookup(b.idToken, tenant: tenantB))
        }
    }

    @Test(
        "an admin bearer on the client paths (no API key) is an admin call in the body's tenant; a wrong one is a 401")
    func privilegedCallsOnClientPathsActAsAdmin() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let s1 = try await service.signUpAnonymous(tenant)
            let admin = service.client.key(nil).bearer(InProcess.adminToken)
            for prefix in ["", "/identitytoolkit.googleapis.com"] {
                let found = try expectOK(
                    try await admin.post(
                        "\(prefix)/v1/accounts:lookup", #"{"tenantId":"\#(tenant)","localId":["\#(s1.localId)"]}"#))
                #expect((found["users"]?.arrayValue ?? []).compactMap { $0["localId"]?.stringValue } == [s1.localId])
            }
            // The project's scope does not see the tenant's user.
            let project = try expectOK(try await admin.post("/v1/accounts:lookup", #"{"localId":["\#(s1.localId)"]}"#))
            #expect(project["users"] == nil)
            // A wrong bearer is refused, not downgraded to a client call.
            let wrong = try await service.client.key(nil).bearer("nope").post(
                "/v1/accounts:lookup", #"{"tenantId":"\#(tenant)","localId":["\#(s1.localId)"]}"#)
            try expectStatusError(wrong, .unauthorized, "UNAUTHENTICATED")

            let deleted = try expectOK(
                try await admin.post("/v1/accounts:delete", #"{"tenantId":"\#(tenant)","localId":"\#(s1.localId)"}"#))
            #expect(deleted["kind"]?.stringValue == Kind.delete)
            #expect(try await service.directory.lookupUsers(tenant, [s1.localId]).isEmpty)
        }
    }

    @Test("a deleted tenant is gone for admins and clients, and its users' tokens stop working")
    func deletedTenantIsGone() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenant = try await directory.createTenantID()
            let session = try await service.signUpAnonymous(tenant)
            let path = "\(directory.tenantsPath)/\(tenant)"
            let deleted = try await directory.admin.request(.delete, path)
            #expect(try expectOK(deleted) == .object([:]))

            try expectError(try await directory.admin.get(path), "TENANT_NOT_FOUND")
            try expectError(try await directory.admin.request(.delete, path), "TENANT_NOT_FOUND")
            try expectError(
                try await directory.admin.request(
                    .patch, "\(path)?updateMask=enableAnonymousUser", body: #"{"enableAnonymousUser":true}"#),
                "TENANT_NOT_FOUND")
            try expectError(
                try await service.client.post("/v1/accounts:signUp", #"{"tenantId":"\#(tenant)"}"#), "TENANT_NOT_FOUND")
            let listed = try expectOK(try await directory.admin.get("\(directory.tenantsPath)?pageSize=1000"))
            let remaining = (listed["tenants"]?.arrayValue ?? []).compactMap { $0["tenantId"]?.stringValue }
            #expect(!remaining.contains(tenant))
            try expectErrorShape(try await service.refreshRaw(session.refreshToken), .badRequest)
            try expectErrorShape(try await service.lookup(session.idToken, tenant: tenant), .badRequest)
        }
    }

    @Test("an unknown tenant is never created implicitly")
    func unknownTenantIsNeverCreatedImplicitly() async throws {
        try await InProcess.withTokenService { service in
            let ghost = "ghost-\(Secrets.randomAlphanumeric(12).lowercased())"
            try expectError(
                try await service.client.post("/v1/accounts:signUp", #"{"tenantId":"\#(ghost)"}"#), "TENANT_NOT_FOUND")
            try expectError(
                try await service.directory.admin.get("\(service.directory.tenantsPath)/\(ghost)"), "TENANT_NOT_FOUND")
            try expectError(
                try await service.directory.admin.post(
                    service.directory.accountsPath(ghost, "lookup"), #"{"localId":["someone"]}"#),
                "TENANT_NOT_FOUND")
        }
    }

    @Test("accounts:query counts, sorts, pages and filters by email, userId and anonymity")
    func queryCountsSortsPagesAndFilters() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenant = try await directory.createTenantID(#""allowPasswordSignup":true"#)
            let emails = (0..<3).map { InProcess.uniqueEmail("q\($0)") }.sorted()
            var ids: [String] = []
            for email in emails {
                let data = try expectOK(
                    try await service.client.post(
                        "/v1/accounts:signUp", #"{"tenantId":"\#(tenant)","email":"\#(email)","password":"secret12"}"#))
                ids.append(try #require(data["localId"]?.stringValue))
            }
            var anonymous: [String] = []
            for _ in 0..<2 { anonymous.append(try await service.signUpAnonymous(tenant).localId) }
            let path = directory.accountsPath(tenant, "query")
            func query(_ body: String) async throws -> JSONValue {
                try expectOK(try await directory.admin.post(path, body))
            }
            func localIDs(_ data: JSONValue) -> [String] {
                (data["userInfo"]?.arrayValue ?? []).compactMap { $0["localId"]?.stringValue }
            }
            func emailsOf(_ data: JSONValue) -> [String] {
                (data["userInfo"]?.arrayValue ?? []).compactMap { $0["email"]?.stringValue }
            }

            let everything = try await query("{}")
            #expect(everything["recordsCount"]?.stringValue == "5")
            #expect(localIDs(everything) == (ids + anonymous).sorted())
            #expect(
                try await query(#"{"returnUserInfo":false,"expression":[{"anonymous":true}]}"#)
                    == .object(["recordsCount": .string("2")]))
            #expect(
                emailsOf(try await query(#"{"expression":[{"email":"\#(emails[1].uppercased())"}]}"#)) == [emails[1]])
            let byID = try await query(#"{"expression":[{"userId":"\#(ids[0])"},{"userId":"\#(anonymous[0])"}]}"#)
            #expect(localIDs(byID).sorted() == [ids[0], anonymous[0]].sorted())
            let expression = emails.map { #"{"email":"\#($0)"}"# }.joined(separator: ",")
            let descending = try await query(#"{"sortBy":"USER_EMAIL","order":"DESC","expression":[\#(expression)]}"#)
            #expect(emailsOf(descending) == emails.reversed())
            let page = try await query(
                #"{"sortBy":"USER_EMAIL","order":"ASC","limit":2,"offset":1,"expression":[\#(expression)]}"#)
            #expect(page["recordsCount"]?.stringValue == "3" && emailsOf(page) == Array(emails[1...2]))
            try expectStatusError(
                try await directory.admin.post(path, #"{"sortBy":"SHOE_SIZE"}"#), .badRequest, "INVALID_ARGUMENT")
        }
    }

    @Test("batchGet pages by localId with a token on every full page; batchDelete refuses enabled users unless forced")
    func batchGetAndBatchDelete() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let tenant = try await directory.createTenantID()
            var ids: [String] = []
            for _ in 0..<2 { ids.append(try await service.signUpAnonymous(tenant).localId) }
            ids.sort()
            let path = directory.accountsPath(tenant, "batchGet")
            let full = try expectOK(try await directory.admin.get("\(path)?maxResults=2"))
            let users = full["users"]?.arrayValue ?? []
            #expect(users.compactMap { $0["localId"]?.stringValue } == ids)
            #expect(full["nextPageToken"]?.stringValue == ids.last, "a full page always carries a token")
            #expect(users.allSatisfy { $0["passwordHash"] == nil })
            let token = try #require(full["nextPageToken"]?.stringValue)
            let after = try expectOK(try await directory.admin.get("\(path)?maxResults=2&nextPageToken=\(token)"))
            #expect(after["users"] == nil && after["nextPageToken"] == nil)

            let deletePath = directory.accountsPath(tenant, "batchDelete")
            let refused = try expectOK(
                try await directory.admin.post(deletePath, #"{"localIds":\#(json(ids + ["unknown-id"]))}"#))
            let errors = refused["errors"]?.arrayValue ?? []
            #expect(errors.compactMap { $0["index"]?.intValue } == [0, 1])
            #expect(errors.compactMap { $0["localId"]?.stringValue } == ids)
            #expect(
                errors.first?["message"]?.stringValue == "NOT_DISABLED : Disable the account before batch deletion.")
            let forced = try expectOK(
                try await directory.admin.post(deletePath, #"{"localIds":\#(json(ids)),"force":true}"#))
            #expect(forced == .object([:]))
            #expect(try await directory.lookupUsers(tenant, ids).isEmpty)
        }
    }
}
