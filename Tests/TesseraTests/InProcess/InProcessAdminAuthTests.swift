import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// Who may call the directory: the admin bearer, scoped admin credentials, the internal secret
/// (Tests/stack/test_api_errors.py, test_admin_credentials.py, test_worker.py).
@Suite("in-process: admin and internal authentication", .enabled(if: PostgresSupport.available))
struct InProcessAdminAuthTests {
    static let missingMessage =
        "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential."

    @Test("the admin API answers 401 UNAUTHENTICATED to a missing, wrong or non-Bearer credential and changes nothing")
    func adminAPIRequiresTheBearerSecret() async throws {
        try await InProcess.withDirectory { directory in
            let tenant = try await directory.createTenantID()
            let p = InProcess.projectID
            let callers: [(HTTPCaller, HTTPFields, message: String, reason: String)] = [
                (directory.http.bearer("not-the-admin-token"), [:], "Invalid Credentials", "authError"),
                (directory.http, [:], Self.missingMessage, "required"),
                (directory.http, [.authorization: "Basic \(InProcess.adminToken)"], Self.missingMessage, "required"),
            ]
            for (caller, headers, message, reason) in callers {
                let answers = [
                    try await caller.get(directory.tenantsPath, headers: headers),
                    try await caller.get("\(directory.tenantsPath)/\(tenant)", headers: headers),
                    try await caller.post(directory.tenantsPath, #"{"displayName":"nobody1"}"#, headers: headers),
                    try await caller.get("/v2/projects/\(p)/config", headers: headers),
                    try await caller.post(
                        directory.accountsPath(tenant, "lookup"), #"{"localId":["x"]}"#, headers: headers),
                    try await caller.post(
                        directory.accountsPath(tenant, "delete"), #"{"localId":"x"}"#, headers: headers),
                    try await caller.get("/identitytoolkit.googleapis.com\(directory.tenantsPath)", headers: headers),
                ]
                for answer in answers {
                    let error = try expectStatusError(answer, .unauthorized, "UNAUTHENTICATED")
                    #expect(error["message"]?.stringValue == message, "\(answer)")
                    #expect(error["errors"]?[0]?["reason"]?.stringValue == reason, "\(answer)")
                }
            }
            // Nothing was created; the tenant is still there.
            let listed = try expectOK(try await directory.admin.get(directory.tenantsPath))
            #expect((listed["tenants"]?.arrayValue ?? []).compactMap { $0["tenantId"]?.stringValue } == [tenant])
        }
    }

    @Test("a tenant-scoped credential manages its own tenant, gets 403 everywhere else, and is revoked at once")
    func tenantScopedCredential() async throws {
        try await InProcess.withDirectory { directory in
            let p = InProcess.projectID
            let own = try await directory.createTenantID()
            let other = try await directory.createTenantID()
            let created = try expectOK(
                try await directory.admin.post(
                    "/v2/projects/\(p)/tenants/\(own)/adminCredentials", #"{"displayName":"ci"}"#))
            let secret = try #require(created["secret"]?.stringValue)
            let credentialID = try #require(created["credentialId"]?.stringValue)
            #expect(created["tenantId"]?.stringValue == own)
            #expect(created["name"]?.stringValue?.hasSuffix("/adminCredentials/\(credentialID)") == true)
            let listed = try expectOK(
                try await directory.admin.get("/v2/projects/\(p)/tenants/\(own)/adminCredentials"))
            let credentials = listed["adminCredentials"]?.arrayValue ?? []
            #expect(credentials.compactMap { $0["credentialId"]?.stringValue } == [credentialID])
            #expect(credentials.first?["secret"] == nil)

            let scoped = directory.http.bearer(secret)
            let email = InProcess.uniqueEmail("scoped")
            let user = try expectOK(
                try await scoped.post("/v1/projects/\(p)/tenants/\(own)/accounts", #"{"email":"\#(email)"}"#))
            let found = try expectOK(
                try await scoped.post("/v1/projects/\(p)/tenants/\(own)/accounts:lookup", #"{"email":["\#(email)"]}"#))
            #expect(found["users"]?[0]?["localId"] == user["localId"])
            let patched = try expectOK(
                try await scoped.request(
                    .patch, "/v2/projects/\(p)/tenants/\(own)?updateMask=enableAnonymousUser",
                    body: #"{"enableAnonymousUser":false}"#))
            #expect(patched["enableAnonymousUser"]?.boolValue == false)
            try expectOK(try await scoped.get("/v2/projects/\(p)/tenants/\(own)"))

            let forbidden: [(HTTPRequest.Method, String, String?)] = [
                (.post, "/v1/projects/\(p)/tenants/\(other)/accounts:lookup", #"{"localId":["x"]}"#),
                (.post, "/v1/projects/\(p)/accounts:lookup", #"{"localId":["x"]}"#),
                (.get, "/v2/projects/\(p)/config", nil),
                (.patch, "/v2/projects/\(p)/config?updateMask=enableAnonymousUser", #"{"enableAnonymousUser":true}"#),
                (.get, "/v2/projects/\(p)/tenants", nil),
                (.post, "/v2/projects/\(p)/tenants", #"{"displayName":"Nope"}"#),
                (.delete, "/v2/projects/\(p)/tenants/\(own)", nil),
                (.get, "/v2/projects/\(p)/tenants/\(own)/adminCredentials", nil),
                (.post, "/v2/projects/\(p)/tenants/\(own)/adminCredentials", #"{"displayName":"more"}"#),
                (.get, "/v2/projects/\(p)/tenants/\(other)/auditLog", nil),
            ]
            for (method, path, body) in forbidden {
                let answer = try await scoped.request(method, path, body: body)
                let error = try expectStatusError(answer, .forbidden, "PERMISSION_DENIED")
                #expect(error["message"]?.stringValue == "INSUFFICIENT_PERMISSION", "\(answer)")
            }
            try expectOK(try await directory.admin.get("/v2/projects/\(p)/tenants/\(own)"))

            // Revocation takes effect at once.
            try expectOK(
                try await directory.admin.request(
                    .delete, "/v2/projects/\(p)/tenants/\(own)/adminCredentials/\(credentialID)"))
            try expectStatusError(
                try await scoped.get("/v2/projects/\(p)/tenants/\(own)"), .unauthorized, "UNAUTHENTICATED")
            try expectError(
                try await directory.admin.request(
                    .delete, "/v2/projects/\(p)/tenants/\(own)/adminCredentials/\(credentialID)"),
                "CREDENTIAL_NOT_FOUND")
        }
    }

    @Test("a project credential reaches the project and its tenants; a wrong secret is a 401")
    func projectCredentialAndWrongSecrets() async throws {
        try await InProcess.withDirectory { directory in
            let p = InProcess.projectID
            let created = try expectOK(
                try await directory.admin.post("/v2/projects/\(p)/adminCredentials", #"{"displayName":"backend"}"#))
            #expect(created["tenantId"] == nil)
            let secret = try #require(created["secret"]?.stringValue)
            let tenant = try await directory.createTenantID()
            let project = directory.http.bearer(secret)
            try expectOK(try await project.get("/v2/projects/\(p)/config"))
            try expectOK(try await project.post(directory.accountsPath(tenant, "lookup"), #"{"localId":["x"]}"#))
            try expectStatusError(
                try await directory.http.bearer(secret + "x").get("/v2/projects/\(p)/config"), .unauthorized,
                "UNAUTHENTICATED")
            let credentialID = try #require(created["credentialId"]?.stringValue)
            try expectOK(
                try await directory.admin.request(.delete, "/v2/projects/\(p)/adminCredentials/\(credentialID)"))
            try expectStatusError(try await project.get("/v2/projects/\(p)/config"), .unauthorized, "UNAUTHENTICATED")
        }
    }

    @Test("the internal API refuses calls without the internal secret or with a wrong one")
    func internalAPIRequiresTheSecret() async throws {
        try await InProcess.withDirectory { directory in
            let calls: [(HTTPRequest.Method, String, String?)] = [
                (.get, InternalEndpoints.status.path, nil),
                (.get, RouteTable.path, nil),
                (.post, InternalEndpoints.signUpAnonymous.path, "{}"),
                (.post, InternalEndpoints.checkAdmin.path, #"{"authorization":"Bearer \#(InProcess.adminToken)"}"#),
                (.post, InternalEndpoints.cleanupLease.path, "{}"),
            ]
            for (method, path, body) in calls {
                for headers: HTTPFields in [[:], [.internalSecret: "wrong"], [.internalSecret: ""]] {
                    let answer = try await directory.http.request(method, path, body: body, headers: headers)
                    let error = try expectStatusError(answer, .forbidden, "PERMISSION_DENIED")
                    #expect(error["message"]?.stringValue == "PERMISSION_DENIED : internal API", "\(answer)")
                }
            }
            // The admin bearer is no internal secret either.
            try expectStatusError(
                try await directory.admin.get(InternalEndpoints.status.path), .forbidden, "PERMISSION_DENIED")
            let status = try expectOK(
                try await directory.http.get(
                    InternalEndpoints.status.path, headers: [.internalSecret: InProcess.internalSecret]))
            #expect(status["service"]?.stringValue == "user-directory")
        }
    }

    @Test("unknown directory routes answer 404 and malformed admin JSON answers 400, both in the Google shape")
    func notFoundAndMalformedJSON() async throws {
        try await InProcess.withDirectory { directory in
            let p = InProcess.projectID
            for answer in [
                try await directory.admin.post("/v2/projects/\(p)/nothingHere"),
                try await directory.admin.get("/definitely/not/a/route"),
            ] {
                let error = try expectStatusError(answer, .notFound, "NOT_FOUND")
                #expect(error["message"]?.stringValue == "Not Found", "\(answer)")
            }
            for body in ["{]", "{not json", #"{"displayName": "#] {
                let answer = try await directory.admin.post(directory.tenantsPath, body)
                let error = try expectStatusError(answer, .badRequest, "INVALID_ARGUMENT")
                #expect(error["message"]?.stringValue?.hasPrefix("Invalid JSON payload received") == true, "\(answer)")
            }
            let listed = try expectOK(try await directory.admin.get(directory.tenantsPath))
            #expect(listed["tenants"] == nil || listed["tenants"]?.arrayValue?.isEmpty == true)
        }
    }
}
