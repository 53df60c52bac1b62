import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared

/// Caller identification and the Google error envelope on the token service
/// (docs/protocol/README.md#transport-conventions, #errors; Tests/stack/test_api_errors.py).
@Suite("in-process: API keys and error shapes of the client API", .enabled(if: PostgresSupport.available))
struct InProcessClientErrorTests {
    static let badKeyMessage = "API key not valid. Please pass a valid API key."

    @Test("a client call without an API key is 403 PERMISSION_DENIED; with a wrong one, 400 INVALID_ARGUMENT")
    func apiKeyIsRequiredAndChecked() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let signUp = #"{"returnSecureToken":true,"tenantId":"\#(tenant)"}"#
            let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            let refresh = "grant_type=refresh_token&refresh_token=whatever"
            let noKey = service.client.key(nil)
            for answer in [
                try await noKey.post("/v1/accounts:signUp", signUp),
                try await noKey.post("/identitytoolkit.googleapis.com/v1/accounts:signUp", signUp),
                try await noKey.post("/v1/accounts:lookup", #"{"idToken":"whatever","tenantId":"\#(tenant)"}"#),
                try await noKey.request(.post, "/securetoken.googleapis.com/v1/token", body: refresh, headers: form),
            ] {
                let error = try expectStatusError(answer, .forbidden, "PERMISSION_DENIED")
                #expect(error["errors"]?[0]?["reason"]?.stringValue == "forbidden", "\(answer)")
            }
            for answer in [
                try await service.client.key("AIzaWrongKey0000000000").post("/v1/accounts:signUp", signUp),
                try await noKey.post("/v1/accounts:signUp", signUp, headers: [.googAPIKey: "AIzaWrongKey0000000000"]),
                try await service.client.key(InProcess.apiKey + "x").post(
                    "/v1/accounts:lookup", #"{"idToken":"whatever","tenantId":"\#(tenant)"}"#),
                try await service.client.key("nope").request(.post, "/v1/token", body: refresh, headers: form),
            ] {
                let error = try expectStatusError(answer, .badRequest, "INVALID_ARGUMENT")
                #expect(error["message"]?.stringValue == Self.badKeyMessage, "\(answer)")
            }
            // Nobody was signed up by the refused calls.
            let query = try expectOK(
                try await service.directory.admin.post(service.directory.accountsPath(tenant, "query"), "{}"))
            #expect(query["recordsCount"]?.stringValue == "0")
        }
    }

    @Test("unknown routes of the token service answer 404 NOT_FOUND in the Google shape")
    func unknownRoutesAnswer404() async throws {
        try await InProcess.withTokenService { service in
            for answer in [
                try await service.client.post("/v1/accounts:frobnicate"),
                try await service.client.get("/v1/no/such/thing"),
                try await service.client.key(nil).get("/definitely/not/a/route"),
                try await service.client.post("/www.googleapis.com/identitytoolkit/v3/relyingparty/noSuchRpc"),
            ] {
                let error = try expectStatusError(answer, .notFound, "NOT_FOUND")
                #expect(error["message"]?.stringValue == "Not Found", "\(answer)")
            }
        }
    }

    @Test("malformed JSON is 400 INVALID_ARGUMENT 'Invalid JSON payload received' on both services")
    func malformedJSONIsInvalidArgument() async throws {
        try await InProcess.withTokenService { service in
            for answer in [
                try await service.client.post("/v1/accounts:signUp", "{not json"),
                try await service.client.post("/v1/accounts:lookup", #"{"idToken": "#),
                try await service.client.post("/v1/token", "{oops"),
                try await service.directory.admin.post(service.directory.tenantsPath, "{]"),
            ] {
                let error = try expectStatusError(answer, .badRequest, "INVALID_ARGUMENT")
                #expect(error["message"]?.stringValue?.hasPrefix("Invalid JSON payload received") == true, "\(answer)")
            }
        }
    }

    @Test("business errors are exactly {code, message, errors:[{message, reason: invalid, domain: global}]}")
    func businessErrorsHaveNoStatus() async throws {
        try await InProcess.withTokenService { service in
            let answer = try await service.client.post(
                "/v1/accounts:signUp", #"{"returnSecureToken":true,"tenantId":"no-such-tenant-0123456789"}"#)
            try expectError(answer, "TENANT_NOT_FOUND")
            let message = try #require(answer.json?["error"]?["message"]?.stringValue)
            #expect(
                answer.json
                    == .object([
                        "error": .object([
                            "code": .int(400), "message": .string(message),
                            "errors": .array([
                                .object([
                                    "message": .string(message), "reason": .string("invalid"),
                                    "domain": .string("global"),
                                ])
                            ]),
                        ])
                    ]), "\(answer)")
            #expect(message == "TENANT_NOT_FOUND" || message.hasPrefix("TENANT_NOT_FOUND : "))
            // The same envelope from the admin side.
            try expectError(
                try await service.directory.admin.get("\(service.directory.tenantsPath)/no-such-tenant-0123456789"),
                "TENANT_NOT_FOUND")
        }
    }

    @Test("out-of-scope features answer 501 NOT_IMPLEMENTED naming the missing call, never a 404")
    func outOfScopeFeaturesAnswer501() async throws {
        try await InProcess.withTokenService { service in
            let client = service.client
            let admin = service.directory.admin
            let p = InProcess.projectID
            let calls = [
                try await client.post("/v2/accounts/passkeyEnrollment:start"),
                try await client.post("/v2/accounts/passkeyEnrollment:finalize"),
                try await client.post("/v2/accounts/passkeySignIn:finalize"),
                try await client.post("/v2/accounts/passkeySignIn:start"),
                try await client.post("/identitytoolkit.googleapis.com/v2/accounts/passkeySignIn:start"),
                try await client.post("/www.googleapis.com/identitytoolkit/v3/relyingparty/signOutUser"),
                try await client.post("/identitytoolkit/v3/relyingparty/verifyClient"),
                try await client.post("/www.googleapis.com/identitytoolkit/v3/relyingparty/signInWithGameCenter"),
                try await admin.post("/v2/projects/\(p)/inboundSamlConfigs?inboundSamlConfigId=saml.x"),
                try await admin.get("/v2/projects/\(p)/inboundSamlConfigs"),
                try await admin.request(.delete, "/v2/projects/\(p)/inboundSamlConfigs/saml.x"),
            ]
            for answer in calls {
                let error = try expectStatusError(answer, .notImplemented, "NOT_IMPLEMENTED")
                #expect(error["message"]?.stringValue?.contains("is not implemented in Tessera") == true, "\(answer)")
            }
            #expect(calls[5].json?["error"]?["message"]?.stringValue?.contains("signOutUser") == true)
        }
    }
}
