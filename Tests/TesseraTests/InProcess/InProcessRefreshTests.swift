import Foundation
import HTTPTypes
import Testing
import TokenService

@testable import TesseraShared

/// The Secure Token API: exchange, rotation, the grace window, reuse detection
/// (Tests/stack/test_refresh_tokens.py).
@Suite("in-process: refresh tokens", .enabled(if: PostgresSupport.available))
struct InProcessRefreshTests {
    /// How a refresh is sent: the form body of the REST API, snake_case JSON, or camelCase JSON.
    enum Style: CaseIterable {
        case form, json, camel
    }

    static func refresh(
        _ service: TokenHarness, _ token: String, style: Style, prefix: String = ""
    ) async throws -> Answer {
        switch style {
        case .form:
            return try await service.refreshRaw(token, prefix: prefix)
        case .json:
            return try await service.client.post(
                "\(prefix)/v1/token", #"{"grant_type":"refresh_token","refresh_token":"\#(token)"}"#)
        case .camel:
            return try await service.client.post(
                "\(prefix)/v1/token", #"{"grantType":"refresh_token","refreshToken":"\#(token)"}"#)
        }
    }

    /// Checks a token response (conftest's `check_token_response`) and returns the ID token's claims.
    static func checkTokenResponse(
        _ data: JSONValue, _ service: TokenHarness, localID: String, tenant: String, previous: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> JSONValue {
        #expect(data["access_token"] == data["id_token"], sourceLocation: sourceLocation)
        #expect(data["expires_in"]?.stringValue == "3600", sourceLocation: sourceLocation)
        #expect(data["token_type"]?.stringValue == "Bearer", sourceLocation: sourceLocation)
        #expect(data["user_id"]?.stringValue == localID, sourceLocation: sourceLocation)
        #expect(data["project_id"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
        #expect(data["refresh_token"]?.stringValue != previous, "not rotated", sourceLocation: sourceLocation)
        let claims = try service.verify(data["id_token"]?.stringValue)
        #expect(claims["sub"]?.stringValue == localID && claims["user_id"]?.stringValue == localID)
        #expect(claims["exp"]?.intValue == claims["iat"]?.intValue.map { $0 + 3600 }, sourceLocation: sourceLocation)
        #expect(claims["firebase"]?["sign_in_provider"]?.stringValue == "anonymous", sourceLocation: sourceLocation)
        #expect(claims["firebase"]?["tenant"]?.stringValue == tenant, sourceLocation: sourceLocation)
        return claims
    }

    @Test(
        "a refresh returns a new verifiable pair in every body style and path form, and the new token refreshes in turn"
    )
    func refreshReturnsANewVerifiablePair() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let cases: [(Style, String)] = [
                (.form, ""), (.form, "/securetoken.googleapis.com"), (.json, ""),
                (.json, "/securetoken.googleapis.com"),
                (.camel, ""),
            ]
            for (style, prefix) in cases {
                let session = try await service.signUpAnonymous(tenant)
                let first = try claims(session.idToken)
                let data = try expectOK(
                    try await Self.refresh(service, session.refreshToken, style: style, prefix: prefix))
                let claims = try Self.checkTokenResponse(
                    data, service, localID: session.localId, tenant: tenant, previous: session.refreshToken)
                // auth_time stays at the sign-in, not the refresh.
                #expect(claims["auth_time"] == first["auth_time"], "\(style) \(prefix)")
                let next = try #require(data["refresh_token"]?.stringValue)
                let again = try expectOK(try await Self.refresh(service, next, style: style, prefix: prefix))
                _ = try Self.checkTokenResponse(
                    again, service, localID: session.localId, tenant: tenant, previous: next)
            }
            // The API key may come in the header too.
            let session = try await service.signUpAnonymous(tenant)
            let inHeader = try await service.client.key(nil).request(
                .post, "/v1/token", body: "grant_type=refresh_token&refresh_token=\(session.refreshToken)",
                headers: [.contentType: "application/x-www-form-urlencoded", .googAPIKey: InProcess.apiKey])
            _ = try Self.checkTokenResponse(
                try expectOK(inHeader), service, localID: session.localId, tenant: tenant,
                previous: session.refreshToken)
        }
    }

    @Test("a retry of a just-rotated token within the grace window returns the same new token, and the family goes on")
    func retryWithinGraceReturnsTheSameToken() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let session = try await service.signUpAnonymous(tenant)
            let first = try await service.refresh(session.refreshToken)
            let retry = try expectOK(
                try await Self.refresh(
                    service, session.refreshToken, style: .json, prefix: "/securetoken.googleapis.com"))
            #expect(
                retry["refresh_token"] == first["refresh_token"], "a retry in the grace window returns the same token")
            #expect(retry["user_id"]?.stringValue == session.localId)
            let claims = try service.verify(retry["id_token"]?.stringValue)
            #expect(claims["sub"]?.stringValue == session.localId)
            #expect(claims["firebase"]?["tenant"]?.stringValue == tenant)
            let newest = try #require(first["refresh_token"]?.stringValue)
            let next = try await service.refresh(newest)
            #expect(![newest, session.refreshToken].contains(next["refresh_token"]?.stringValue ?? ""))
            #expect(next["user_id"]?.stringValue == session.localId)
        }
    }

    @Test("reuse after the grace window revokes the whole family, and only that family")
    func reuseAfterGraceRevokesTheWholeFamily() async throws {
        let grace = Duration.seconds(1)
        try await InProcess.withTokenService(configure: { $0.refreshGrace = grace }) { service in
            let tenant = try await service.directory.createTenantID()
            // Family A: a0 -> a1, then a0 is reused after the window.
            let a = try await service.signUpAnonymous(tenant)
            let a1 = try #require(try await service.refresh(a.refreshToken)["refresh_token"]?.stringValue)
            // Family B: b0 -> b1 -> b2, then b1 (the just-rotated one) is reused after the window.
            let b = try await service.signUpAnonymous(tenant)
            let b1 = try #require(try await service.refresh(b.refreshToken)["refresh_token"]?.stringValue)
            let b2 = try #require(try await service.refresh(b1)["refresh_token"]?.stringValue)
            // A bystander family in the same tenant.
            let c = try await service.signUpAnonymous(tenant)

            // Past the configured window (the rotation's own time is not in it, so this is a bound).
            try await Task.sleep(for: grace + .milliseconds(300))

            try expectError(try await service.refreshRaw(a.refreshToken), "TOKEN_EXPIRED")
            try expectError(try await service.refreshRaw(a1), "TOKEN_EXPIRED")
            try expectError(try await service.refreshRaw(a.refreshToken), "TOKEN_EXPIRED")
            try expectError(try await Self.refresh(service, b1, style: .json), "TOKEN_EXPIRED")
            try expectError(try await Self.refresh(service, b2, style: .json), "TOKEN_EXPIRED")
            try expectError(try await service.refreshRaw(b.refreshToken), "TOKEN_EXPIRED")

            #expect(try await service.refresh(c.refreshToken)["user_id"]?.stringValue == c.localId)
            // Reuse detection ends the family, not the user.
            let users = try await service.directory.lookupUsers(tenant, [a.localId])
            #expect(users.compactMap { $0["localId"]?.stringValue } == [a.localId])
        }
    }

    @Test("the token endpoint's request errors consume nothing")
    func tokenEndpointRequestErrors() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let session = try await service.signUpAnonymous(tenant)
            try expectError(try await service.refreshRaw(session.refreshToken, grantType: nil), "MISSING_GRANT_TYPE")
            try expectError(
                try await service.refreshRaw(session.refreshToken, grantType: "authorization_code"),
                "INVALID_GRANT_TYPE")
            try expectError(try await service.refreshRaw(nil), "MISSING_REFRESH_TOKEN")
            try expectError(
                try await service.client.post("/v1/token", #"{"grant_type":"refresh_token"}"#), "MISSING_REFRESH_TOKEN")
            try expectError(
                try await service.refreshRaw("AMf-" + String(repeating: "x", count: 60)), "INVALID_REFRESH_TOKEN")
            try expectError(
                try await Self.refresh(service, "not a token at all", style: .json), "INVALID_REFRESH_TOKEN")
            let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            let body = "grant_type=refresh_token&refresh_token=\(session.refreshToken)"
            try expectStatusError(
                try await service.client.key(nil).request(.post, "/v1/token", body: body, headers: form), .forbidden,
                "PERMISSION_DENIED")
            let wrong = try expectStatusError(
                try await service.client.key("wrong-" + InProcess.apiKey).request(
                    .post, "/v1/token", body: body, headers: form),
                .badRequest, "INVALID_ARGUMENT")
            #expect(wrong["message"]?.stringValue == InProcessClientErrorTests.badKeyMessage)
            // None of the failed calls consumed the token.
            #expect(try await service.refresh(session.refreshToken)["user_id"]?.stringValue == session.localId)
        }
    }

    @Test("malformed form bodies are a 400 and the service stays up; escapes and repeated names read as before")
    func malformedFormBodies() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let session = try await service.signUpAnonymous(tenant)
            let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            func post(_ bytes: [UInt8]) async throws -> Answer {
                try await service.client.request(.post, "/v1/token", bytes: bytes, headers: form)
            }
            for body in [
                "grant_type=refresh_token&refresh_token=%", "grant_type=refresh_token&refresh_token=%zz",
                "grant_type=refresh_token&refresh_token=%C3%28", "%=1",
            ] {
                try expectStatusError(try await post(Array(body.utf8)), .badRequest, "INVALID_ARGUMENT")
            }
            // Characters a URL query may not hold, and bytes that are not UTF-8, are read as they are: the
            // token is then simply not one.
            for body in [
                Array("grant_type=refresh_token&refresh_token=\u{e9} \"<#".utf8),
                Array("grant_type=refresh_token&refresh_token=".utf8) + [0xFF, 0xFE],
            ] {
                try expectError(try await post(body), "INVALID_REFRESH_TOKEN")
            }
            let escaped = "grant_type=refresh%5Ftoken&refresh_token=\(session.refreshToken)&refresh_token=other&x=a+b"
            #expect(try expectOK(try await post(Array(escaped.utf8)))["user_id"]?.stringValue == session.localId)
        }
    }

    @Test("concurrent refreshes of one token all succeed and agree on one successor")
    func concurrentRefreshesAgreeOnOneSuccessor() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID()
            let session = try await service.signUpAnonymous(tenant)
            let answers = try await withThrowingTaskGroup(of: Answer.self) { group in
                for _ in 0..<20 { group.addTask { try await service.refreshRaw(session.refreshToken) } }
                return try await group.reduce(into: [Answer]()) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.status == .ok }, "\(answers.filter { $0.status != .ok }.prefix(3))")
            let successors = Set(answers.compactMap { $0.json?["refresh_token"]?.stringValue })
            #expect(successors.count == 1, "\(successors.count) different successors: the family forked")
            #expect(Set(answers.compactMap { $0.json?["user_id"]?.stringValue }) == [session.localId])
            let successor = try #require(successors.first)
            #expect(successor != session.refreshToken)
            let next = try await service.refresh(successor)
            #expect(next["user_id"]?.stringValue == session.localId && next["refresh_token"]?.stringValue != successor)
        }
    }
}
