import Foundation
import Testing

@testable import TesseraShared

/// The order of checks on the end-user endpoints (issue #36; docs/design-notes.md, "Order of checks"),
/// as the Firebase emulator's specs have it: a scope whose sign-in is off answers that before any
/// input error. Ported from `customToken.spec.ts:236`, `deleteAccount.spec.ts:108`,
/// `emailLink.spec.ts:239/252`, `idp.spec.ts:912`, `oob.spec.ts:246/381/394`,
/// `password.spec.ts:207/218` and `setAccountInfo.spec.ts:1214`: each sends only `tenantId`.
@Suite("in-process: a scope's switches come before input errors", .enabled(if: PostgresSupport.available))
struct InProcessCheckOrderTests {
    static let endpoints = [
        "/v1/accounts:signInWithCustomToken", "/v1/accounts:delete", "/v1/accounts:signInWithEmailLink",
        "/v1/accounts:signInWithIdp", "/v1/accounts:sendOobCode", "/v1/accounts:resetPassword",
        "/v1/accounts:signInWithPassword", "/v1/accounts:update",
    ]

    @Test("a disableAuth tenant answers PROJECT_DISABLED to a request that has nothing but its tenantId")
    func disabledScopeFirst() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(
                #""disableAuth":true,"allowPasswordSignup":true,"enableEmailLinkSignin":true"#)
            for path in Self.endpoints {
                let answer = try await service.client.post(path, #"{"tenantId":"\#(tenant)"}"#)
                try expectError(answer, "PROJECT_DISABLED")
            }
        }
    }

    @Test("a sign-in method switched off is answered before the request's missing fields")
    func methodSwitchFirst() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(
                #""allowPasswordSignup":false,"enableEmailLinkSignin":false"#)
            let body = #"{"tenantId":"\#(tenant)"}"#
            for (path, code) in [
                ("/v1/accounts:signInWithPassword", "PASSWORD_LOGIN_DISABLED"),
                ("/v1/accounts:resetPassword", "PASSWORD_LOGIN_DISABLED"),
                ("/v1/accounts:signInWithEmailLink", "OPERATION_NOT_ALLOWED"),
            ] {
                try expectError(try await service.client.post(path, body), code)
            }
        }
    }

    @Test("in a scope that is on, the input errors are what they were")
    func inputErrorsStay() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.directory.createTenantID(
                #""allowPasswordSignup":true,"enableEmailLinkSignin":true"#)
            let body = #"{"tenantId":"\#(tenant)"}"#
            for (path, code) in [
                ("/v1/accounts:signInWithCustomToken", "MISSING_CUSTOM_TOKEN"),
                ("/v1/accounts:delete", "MISSING_ID_TOKEN"),
                ("/v1/accounts:signInWithEmailLink", "MISSING_EMAIL"),
                ("/v1/accounts:signInWithIdp", "MISSING_REQUEST_URI"),
                ("/v1/accounts:resetPassword", "MISSING_OOB_CODE"),
                ("/v1/accounts:signInWithPassword", "MISSING_EMAIL"),
                ("/v1/accounts:update", "MISSING_ID_TOKEN"),
            ] {
                try expectError(try await service.client.post(path, body), code)
            }
            // A tenant that does not exist is said so before the missing fields too.
            try expectError(
                try await service.client.post("/v1/accounts:signInWithPassword", #"{"tenantId":"no-such-tenant-1"}"#),
                "TENANT_NOT_FOUND")
        }
    }
}
