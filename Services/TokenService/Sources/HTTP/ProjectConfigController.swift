import Foundation
import Hummingbird
import TesseraShared

/// What the client SDKs ask of the project besides accounts (docs/protocol/sdks.md#the-apple-sdk,
/// #the-js-sdk): the public project config (v1 `projects`, v3 `getProjectConfig`), and the v2 reCAPTCHA
/// config, password policy and token revocation, answered as a project without reCAPTCHA or a password policy
/// answers them so the SDKs carry on.
struct ProjectConfigController {
    let tokens: SessionTokens
    let configuration: TokenServiceConfiguration

    func addRoutes(to clients: RouterGroup<TokenContext>) {
        // Apple sends getProjectConfig as a GET (no body); the emulator's rewrite keeps any method.
        clients.client(.get, "v1/projects", use: projectConfig)
        clients.client(.post, "v1/projects", use: projectConfig)
        clients.client(.get, "v2/recaptchaConfig", use: recaptchaConfig)
        clients.client(.get, "v2/passwordPolicy", use: passwordPolicy)
        clients.client(.post, "v2/accounts:revokeToken", use: revokeToken)
    }

    struct ProjectConfig: Encodable, Sendable {
        /// The project number, as Firebase answers it.
        var projectId: String
        var authorizedDomains: [String]
    }

    @Sendable func projectConfig(_ request: Request, context: ClientContext) async throws -> JSONResponse<ProjectConfig>
    {
        let links = try await tokens.currentLinks(requestID: context.requestID, logger: context.logger)
        return JSONResponse(
            ProjectConfig(projectId: configuration.projectNumber, authorizedDomains: links.authorizedDomains))
    }

    struct RecaptchaConfig: Encodable, Sendable {
        struct ProviderState: Encodable, Sendable {
            var provider: String
            var enforcementState = "OFF"
        }

        var recaptchaEnforcementState = [
            ProviderState(provider: "EMAIL_PASSWORD_PROVIDER"), ProviderState(provider: "PHONE_PROVIDER"),
        ]
        /// The JS SDK's config class refuses an answer without a key (`projects/<p>/keys/<site>`), even
        /// when every provider is off; with every provider off no SDK loads reCAPTCHA, so the site key
        /// is never used. It names itself as what it is.
        var recaptchaKey: String
        var useSmsBotScore = false
        var useSmsTollFraudProtection = false
    }

    /// reCAPTCHA is not enforced for any provider (docs/protocol/README.md#the-surface: reCAPTCHA is out of
    /// scope), so the SDKs send their requests without a reCAPTCHA token.
    @Sendable func recaptchaConfig(_ request: Request, context: ClientContext) async throws -> JSONResponse<
        RecaptchaConfig
    > {
        return JSONResponse(
            RecaptchaConfig(recaptchaKey: "projects/\(configuration.projectID)/keys/recaptcha-disabled"))
    }

    struct PasswordPolicy: Encodable, Sendable {
        struct StrengthOptions: Encodable, Sendable {
            var minPasswordLength = Credentials.minimumPasswordLength
            var maxPasswordLength = Credentials.maximumPasswordLength
        }

        var customStrengthOptions = StrengthOptions()
        var allowedNonAlphanumericCharacters: [String] = []
        var enforcementState = "OFF"
        var forceUpgradeOnSignin = false
        /// The JS SDK refuses any other schema version (`unsupported-password-policy-schema-version`).
        var schemaVersion = 1
    }

    /// No custom policy is enforced; the lengths are Tessera's own rule (docs/protocol/accounts.md#passwords:
    /// 6–4096 characters), so a client-side `validatePassword()` agrees with the server.
    @Sendable func passwordPolicy(_ request: Request, context: ClientContext) async throws -> JSONResponse<
        PasswordPolicy
    > {
        return JSONResponse(PasswordPolicy())
    }

    struct RevokeRequest: Decodable {
        var idToken: String?
        var providerId: String?
        var tokenType: JSONValue?
        var token: String?
        var tenantId: String?
    }

    /// `accounts:revokeToken` (Apple's `revokeToken(withAuthorizationCode:)`, JS `revokeAccessToken`):
    /// asks that the provider's token be revoked at the provider. Tessera never redeems provider
    /// authorization codes nor keeps provider tokens, so there is nothing it holds to revoke; the
    /// caller's ID token is checked like every ID-token call, and the answer is the empty success.
    @Sendable func revokeToken(_ request: Request, context: ClientContext) async throws -> JSONResponse<EmptyObject> {
        let body = try await request.decodeJSON(RevokeRequest.self, context: context)
        guard let providerId = body.providerId, !providerId.isEmpty else {
            throw FirebaseError.invalid(.invalidProviderId)
        }
        guard let token = body.token, !token.isEmpty else {
            throw FirebaseError.invalid(.missingToken)
        }
        _ = try await tokens.verify(
            idToken: body.idToken, requested: Scope(wire: body.tenantId),
            requestID: context.requestID, logger: context.logger)
        return JSONResponse(EmptyObject())
    }
}
