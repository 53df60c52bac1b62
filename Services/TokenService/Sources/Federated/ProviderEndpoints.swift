import Foundation
import TesseraShared

/// Where a built-in provider publishes its keys and user info, and where its authorization flow
/// runs (docs/configuration.md, the `IDP_*` rows; docs/oauth-flows.md §3): production defaults, each overridable per deployment with
/// `IDP_<NAME>_ISSUER`, `_JWKS_URL`, `_USERINFO_URL`, `_TOKEN_CHECK_URL`, `_AUTHORIZATION_URL`,
/// `_TOKEN_URL` (and Twitter's `_REQUEST_TOKEN_URL`).
public struct ProviderEndpoints: Sendable, Equatable {
    /// For OIDC providers; `{tenantid}` stands for the token's `tid` claim (Microsoft).
    public var issuer: String?
    /// Issuer spellings accepted besides `issuer` (Google writes both forms).
    public var alternateIssuers: [String] = []
    public var jwksURL: String?
    public var userInfoURL: String?
    /// Where an OAuth access token is checked to belong to this app (GitHub); `{client_id}` stands
    /// for the configured client id.
    public var tokenCheckURL: String?
    /// Where the browser is sent to sign in (OAuth 2: the authorization endpoint; Twitter: OAuth
    /// 1.0a's `authenticate`). `{tenant}` stands for the directory an app asks Microsoft for
    /// (`customParameters.tenant`, `common` by default).
    public var authorizationURL: String?
    /// Where an authorization code is exchanged (Twitter: OAuth 1.0a's `access_token`).
    public var tokenURL: String?
    /// Twitter: OAuth 1.0a's `request_token`.
    public var requestTokenURL: String?

    public static let defaults: [String: ProviderEndpoints] = [
        "google.com": ProviderEndpoints(
            issuer: "https://accounts.google.com", alternateIssuers: ["accounts.google.com"],
            jwksURL: "https://www.googleapis.com/oauth2/v3/certs",
            authorizationURL: "https://accounts.google.com/o/oauth2/v2/auth",
            tokenURL: "https://oauth2.googleapis.com/token"),
        "apple.com": ProviderEndpoints(
            issuer: "https://appleid.apple.com", jwksURL: "https://appleid.apple.com/auth/keys",
            authorizationURL: "https://appleid.apple.com/auth/authorize",
            tokenURL: "https://appleid.apple.com/auth/token"),
        "microsoft.com": ProviderEndpoints(
            issuer: "https://login.microsoftonline.com/{tenantid}/v2.0",
            jwksURL: "https://login.microsoftonline.com/common/discovery/v2.0/keys",
            authorizationURL: "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize",
            tokenURL: "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"),
        "yahoo.com": ProviderEndpoints(
            issuer: "https://api.login.yahoo.com", jwksURL: "https://api.login.yahoo.com/openid/v1/certs",
            authorizationURL: "https://api.login.yahoo.com/oauth2/request_auth",
            tokenURL: "https://api.login.yahoo.com/oauth2/get_token"),
        "facebook.com": ProviderEndpoints(
            userInfoURL: "https://graph.facebook.com/me",
            authorizationURL: "https://www.facebook.com/v19.0/dialog/oauth",
            tokenURL: "https://graph.facebook.com/v19.0/oauth/access_token"),
        "github.com": ProviderEndpoints(
            userInfoURL: "https://api.github.com/user",
            tokenCheckURL: "https://api.github.com/applications/{client_id}/token",
            authorizationURL: "https://github.com/login/oauth/authorize",
            tokenURL: "https://github.com/login/oauth/access_token"),
        "twitter.com": ProviderEndpoints(
            userInfoURL: "https://api.twitter.com/1.1/account/verify_credentials.json",
            authorizationURL: "https://api.twitter.com/oauth/authenticate",
            tokenURL: "https://api.twitter.com/oauth/access_token",
            requestTokenURL: "https://api.twitter.com/oauth/request_token"),
    ]

    /// The defaults with the environment's overrides applied. An overridden issuer replaces the
    /// alternate spellings too.
    public static func resolve(_ env: ConfigReader) -> [String: ProviderEndpoints] {
        var result = defaults
        for (providerId, var endpoints) in defaults {
            let name = providerId.split(separator: ".")[0].uppercased()
            if let issuer = env.string("IDP_\(name)_ISSUER") {
                endpoints.issuer = issuer
                endpoints.alternateIssuers = []
            }
            if let jwks = env.string("IDP_\(name)_JWKS_URL") { endpoints.jwksURL = jwks }
            if let userInfo = env.string("IDP_\(name)_USERINFO_URL") { endpoints.userInfoURL = userInfo }
            if let check = env.string("IDP_\(name)_TOKEN_CHECK_URL") { endpoints.tokenCheckURL = check }
            if let url = env.string("IDP_\(name)_AUTHORIZATION_URL") { endpoints.authorizationURL = url }
            if let url = env.string("IDP_\(name)_TOKEN_URL") { endpoints.tokenURL = url }
            if let url = env.string("IDP_\(name)_REQUEST_TOKEN_URL") { endpoints.requestTokenURL = url }
            result[providerId] = endpoints
        }
        return result
    }

    /// Whether `iss` is this provider's issuer; `tid` fills Microsoft's `{tenantid}`.
    func accepts(issuer iss: String, tid: String?) -> Bool {
        guard let issuer else { return false }
        if issuer.contains("{tenantid}") {
            guard let tid, !tid.isEmpty, tid.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
            else { return false }
            return iss == issuer.replacingOccurrences(of: "{tenantid}", with: tid)
        }
        return iss == issuer || alternateIssuers.contains(iss)
    }
}
