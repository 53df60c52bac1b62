import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// A tenant credential against another tenant, on both services, and privileged calls on the client
/// paths (issue #4; Tests/stack/test_admin_credentials.py, test_accounts.py).
@Suite("in-process: tenant isolation of admin credentials", .enabled(if: PostgresSupport.available))
struct InProcessTenantIsolationTests {
    @Test(
        "a tenant credential cannot read, write, list or delete anything of another tenant, and nothing changes there")
    func tenantIsolationMatrix() async throws {
        try await InProcess.withTokenService { service in
            let directory = service.directory
            let p = InProcess.projectID
            let own = try await directory.createTenantID(#""allowPasswordSignup":true"#)
            let other = try await directory.createTenantID(#""allowPasswordSignup":true"#)
            let victimEmail = InProcess.uniqueEmail("victim")
            let victim = try expectOK(
                try await directory.admin.post(
                    "/v1/projects/\(p)/tenants/\(other)/accounts", #"{"email":"\#(victimEmail)","password":"secret12"}"#
                ))
            let uid = try #require(victim["localId"]?.stringValue)
            let secret = try #require(
                try expectOK(try await directory.admin.post("/v2/projects/\(p)/tenants/\(own)/adminCredentials", "{}"))[
                    "secret"]?.stringValue)
            let onDirectory = directory.http.bearer(secret)
            // Session cookies are the token service's, on the admin plane.
            let onTokenService = service.client.key(nil).bearer(secret)
            let v1 = "/v1/projects/\(p)/tenants/\(other)"
            let v2 = "/v2/projects/\(p)/tenants/\(other)"
            let matrix: [(String, HTTPCaller, HTTPRequest.Method, String, String?)] = [
                ("read", onDirectory, .post, "\(v1)/accounts:lookup", #"{"localId":["\#(uid)"]}"#),
                ("read", onDirectory, .get, v2, nil),
                ("read", onDirectory, .get, "\(v2)/mailTemplates", nil),
                ("read", onDirectory, .get, "\(v2)/auditLog", nil),
                ("list", onDirectory, .get, "\(v1)/accounts:batchGet", nil),
                ("list", onDirectory, .post, "\(v1)/accounts:query", "{}"),
                ("write", onDirectory, .post, "\(v1)/accounts", #"{"email":"intruder@example.com"}"#),
                (
                    "write", onDirectory, .post, "\(v1)/accounts:update",
                    #"{"localId":"\#(uid)","password":"hijacked1"}"#
                ),
                ("write", onDirectory, .post, "\(v1)/accounts:batchCreate", #"{"users":[{"localId":"intruder"}]}"#),
                (
                    "write", onDirectory, .post, "\(v1)/accounts:sendOobCode",
                    #"{"requestType":"PASSWORD_RESET","email":"\#(victimEmail)","returnOobLink":true}"#
                ),
                ("write", onDirectory, .patch, "\(v2)?updateMask=disableAuth", #"{"disableAuth":true}"#),
                ("write", onDirectory, .patch, "\(v2)/mailTemplates/PASSWORD_RESET", #"{"body":"%LINK%"}"#),
                (
                    "write", onTokenService, .post, "/v1/projects/\(p)/tenants/\(other):createSessionCookie",
                    #"{"idToken":"x"}"#
                ),
                ("delete", onDirectory, .post, "\(v1)/accounts:delete", #"{"localId":"\#(uid)"}"#),
                ("delete", onDirectory, .post, "\(v1)/accounts:batchDelete", #"{"localIds":["\#(uid)"],"force":true}"#),
                ("delete", onDirectory, .delete, v2, nil),
            ]
            for (kind, caller, method, path, body) in matrix {
                let answer = try await caller.request(method, path, body: body)
                #expect(answer.status == .forbidden, "\(kind): \(answer)")
            }
            // Nothing changed in the other tenant.
            let user = try #require(try await directory.lookupUsers(other, [uid]).first)
            #expect(user["email"]?.stringValue == victimEmail && user["disabled"]?.boolValue != true)
            let otherTenant = try expectOK(try await directory.admin.get(v2))
            #expect(otherTenant["disableAuth"]?.boolValue != true)
            try expectOK(try await InProcessPasswordTests.signIn(service, other, victimEmail, password: "secret12"))
            // A tenant admin sees its tenant's own hash key (issue #23), never the project's.
            let ownConfig = try expectOK(try await onDirectory.get("/v2/projects/\(p)/tenants/\(own)"))["hashConfig"]
            #expect(
                ownConfig
                    == (try expectOK(try await directory.admin.get("/v2/projects/\(p)/tenants/\(own)"))["hashConfig"]))
            #expect(ownConfig?["algorithm"]?.stringValue == "SCRYPT")
            let projectConfig = try expectOK(try await directory.admin.get("/v2/projects/\(p)/config"))
            #expect(ownConfig?["signerKey"] != projectConfig["signIn"]?["hashConfig"]?["signerKey"])
        }
    }

    @Test("a privileged sendOobCode on the client path returns the link and still needs a request type")
    func privilegedSendOobCodeReturnsTheLink() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(#""allowPasswordSignup":true"#)
            let email = InProcess.uniqueEmail("priv")
            try expectOK(try await InProcessPasswordTests.signUp(service, tenant, email, password: "secret12"))
            let admin = service.client.key(nil).bearer(InProcess.adminToken)
            let data = try expectOK(
                try await admin.post(
                    "/v1/accounts:sendOobCode",
                    #"{"tenantId":"\#(tenant)","requestType":1,"email":"\#(email)","returnOobLink":true}"#))
            let code = try #require(data["oobCode"]?.stringValue)
            #expect(data["email"]?.stringValue == email && !code.isEmpty)
            #expect(data["oobLink"]?.stringValue?.contains(code) == true, "\(data)")
            try expectError(
                try await admin.post("/v1/accounts:sendOobCode", #"{"tenantId":"\#(tenant)","email":"\#(email)"}"#),
                "MISSING_REQ_TYPE")
        }
    }
}
