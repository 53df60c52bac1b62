import Foundation

// Server-side authorization flows with identity providers (docs/oauth-flows.md): what the token
// service keeps in the directory between sending a browser to a provider (`createAuthUri`, the
// hosted handler) and redeeming the provider's answer (`signInWithIdp`). A flow is found by the
// SHA-256 of its `state` within its scope, read by the handler's callback, and consumed once
// (`InternalEndpoints.createAuthFlow`, `getAuthFlow`, `consumeAuthFlow`).

/// Which client started a flow through the hosted handler, and where its answer goes back.
public struct AuthFlowClient: Codable, Sendable, Equatable {
    public enum Platform: String, Codable, Sendable {
        /// The JS SDK: popup (relay iframe) or redirect (back to `redirectUrl`).
        case web
        /// The Apple SDK: a deep link to the app's URL scheme.
        case ios
        /// The Android SDK: an intent to `GenericIdpActivity`.
        case android
    }

    public var platform: Platform
    /// The SDK's `authType` (`signInViaPopup`, …, or the mobile SDKs' `signInWithRedirect`).
    public var authType: String
    public var eventId: String?
    /// Web: the API key and app name name the app's relay iframe (`apiKey:appName`).
    public var apiKey: String?
    public var appName: String?
    /// Web: the app page (an authorized domain's), where a redirect returns.
    public var redirectUrl: String?
    /// Web: the session id the auth event hands the SDK, which it presents to `signInWithIdp`.
    public var sessionId: String?
    /// iOS: the URL scheme the answer goes to (the reversed client id, or `app-` + app id).
    public var callbackScheme: String?
    /// Android: the app's package.
    public var androidPackage: String?
    /// The handler page's language.
    public var language: String?

    public init(platform: Platform, authType: String) {
        self.platform = platform
        self.authType = authType
    }
}

/// One flow, as started.
public struct AuthFlow: Codable, Sendable, Equatable {
    public var providerId: String
    /// SHA-256 (hex) of each session id that may redeem the flow (`signInWithIdp`'s `sessionId`).
    public var sessionHashes: [String]
    /// SHA-256 (hex) of the API key that started it.
    public var apiKeyHash: String
    /// What `signInWithIdp`'s `requestUri` must be, up to its query: the handler's URL for flows of
    /// the hosted handler, the app's `continueUri` for flows an app started with `createAuthUri`.
    public var continueUri: String
    /// The `redirect_uri` the provider was given (Tessera's handler), sent again with the code.
    public var redirectUri: String
    /// Where the code is exchanged (resolved when the flow started: a tenant's OIDC discovery, or
    /// Microsoft's endpoint for the tenant the app asked for).
    public var tokenURL: String?
    /// OIDC: the nonce the ID token must carry.
    public var nonce: String?
    /// PKCE (RFC 7636): the verifier of the challenge sent with the authorization request.
    public var codeVerifier: String?
    /// Twitter (OAuth 1.0a): the request token and its secret.
    public var requestToken: String?
    public var requestTokenSecret: String?
    /// Set for flows of the hosted handler.
    public var client: AuthFlowClient?

    public init(
        providerId: String, sessionHashes: [String], apiKeyHash: String, continueUri: String, redirectUri: String
    ) {
        self.providerId = providerId
        self.sessionHashes = sessionHashes
        self.apiKeyHash = apiKeyHash
        self.continueUri = continueUri
        self.redirectUri = redirectUri
    }
}

public struct CreateAuthFlowRequest: Codable, Sendable {
    /// The end user's IP address (behind trusted proxies), for the rate limit on started flows.
    public var clientIP: String?
    public var scope: Scope
    public var stateHash: String
    public var flow: AuthFlow
    public var ttlSeconds: Int

    public init(scope: Scope, stateHash: String, flow: AuthFlow, ttlSeconds: Int) {
        self.scope = scope
        self.stateHash = stateHash
        self.flow = flow
        self.ttlSeconds = ttlSeconds
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, scope = "tenantId", stateHash, flow, ttlSeconds
    }
}

/// `authFlows:get` (the flow stays) and `authFlows:consume` (it is deleted): an unexpired flow of
/// the scope, or `INVALID_IDP_RESPONSE`.
public struct AuthFlowRequest: Codable, Sendable {
    public var scope: Scope
    public var stateHash: String

    public init(scope: Scope, stateHash: String) {
        self.scope = scope
        self.stateHash = stateHash
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", stateHash
    }
}

public struct AuthFlowResponse: Codable, Sendable {
    public var flow: AuthFlow

    public init(flow: AuthFlow) {
        self.flow = flow
    }
}

/// The project's authorized domains (docs/configuration.md, `TESSERA_AUTHORIZED_DOMAINS`): the project config's, or the deployment's
/// default (`TESSERA_AUTHORIZED_DOMAINS`) while the config has none.
public struct AuthorizedDomainsResponse: Codable, Sendable {
    public var authorizedDomains: [String]

    public init(authorizedDomains: [String]) {
        self.authorizedDomains = authorizedDomains
    }
}
