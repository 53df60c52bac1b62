import Foundation
import TesseraShared

/// Where a built-in provider publishes its keys and user info (API.md A.8): production defaults,
/// each overridable per deployment with `IDP_<NAME>_ISSUER`, `_JWKS_URL`, `_USERINFO_URL`,
/// `_TOKEN_CHECK_URL`.
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

    public static let defaults: [String: ProviderEndpoints] = [
        "google.com": ProviderEndpoints(
            issuer: "https://accounts.google.com", alternateIssuers: ["accounts.google.com"],
            jwksURL: "https://www.googleapis.com/oauth2/v3/certs"),
        "apple.com": ProviderEndpoints(
            issuer: "https://appleid.apple.com", jwksURL: "https://appleid.apple.com/auth/keys"),
        "microsoft.com": ProviderEndpoints(
            issuer: "https://login.microsoftonline.com/{tenantid}/v2.0",
            jwksURL: "https://login.microsoftonline.com/common/discovery/v2.0/keys"),
        "yahoo.com": ProviderEndpoints(
            issuer: "https://api.login.yahoo.com", jwksURL: "https://api.login.yahoo.com/openid/v1/certs"),
        "facebook.com": ProviderEndpoints(userInfoURL: "https://graph.facebook.com/me"),
        "github.com": ProviderEndpoints(
            userInfoURL: "https://api.github.com/user",
            tokenCheckURL: "https://api.github.com/applications/{client_id}/token"),
        "twitter.com": ProviderEndpoints(
            userInfoURL: "https://api.twitter.com/1.1/account/verify_credentials.json"),
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
