import Foundation

/// The identity providers Tessera knows (docs/protocol/federated.md#federated-providers) and which of their
/// emails it trusts (docs/protocol/accounts.md#verified-email-and-automatic-linking).
public enum FederatedProviders {
    /// How a provider's credential is checked.
    public enum Kind: Sendable, Equatable {
        /// An OIDC ID token, verified against the provider's JWKS.
        case oidc
        /// An OAuth access token, checked against the provider's user-info API.
        case oauth
    }

    /// The built-in providers (`defaultSupportedIdpConfigs`), with a line of description each.
    public static let builtIn: [(id: String, kind: Kind, description: String)] = [
        ("google.com", .oidc, "Google"),
        ("apple.com", .oidc, "Apple"),
        ("microsoft.com", .oidc, "Microsoft"),
        ("yahoo.com", .oidc, "Yahoo"),
        ("facebook.com", .oauth, "Facebook"),
        ("github.com", .oauth, "GitHub"),
        ("twitter.com", .oauth, "Twitter"),
    ]

    public static func isBuiltIn(_ providerId: String) -> Bool {
        builtIn.contains { $0.id == providerId }
    }

    /// `oidc.` followed by letters, digits, `.`, `_` or `-` (the Identity Platform's rule).
    public static func isOIDCProviderID(_ providerId: String) -> Bool {
        guard providerId.hasPrefix("oidc."), providerId.count > 5, providerId.count <= 64 else { return false }
        return providerId.dropFirst(5).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
    }

    public static func kind(of providerId: String) -> Kind? {
        if let entry = builtIn.first(where: { $0.id == providerId }) { return entry.kind }
        return isOIDCProviderID(providerId) ? .oidc : nil
    }

    /// Domains whose addresses a built-in provider owns
    /// (docs/protocol/accounts.md#verified-email-and-automatic-linking).
    public static let trustedDomains: [String: Set<String>] = [
        "google.com": ["gmail.com"],
        "yahoo.com": ["yahoo.com"],
        "microsoft.com": ["outlook.com", "hotmail.com"],
    ]
    /// Providers that verify every address they hand out.
    public static let alwaysVerifying: Set<String> = ["apple.com"]

    /// The addresses a built-in provider is trusted for
    /// (docs/protocol/accounts.md#verified-email-and-automatic-linking), in words.
    public static func trustedFor(_ providerId: String) -> String {
        if alwaysVerifying.contains(providerId) { return "every address it verifies" }
        guard let domains = trustedDomains[providerId] else { return "no address (it never takes over an account)" }
        return domains.sorted().map { "@" + $0 }.joined(separator: ", ")
    }

    /// Whether `providerId` vouches for `email`
    /// (docs/protocol/accounts.md#verified-email-and-automatic-linking): the built-in table, plus the domains
    /// a scope's OIDC provider is configured to verify (`"*"` = all). A provider that says the address is not
    /// verified is never trusted for it.
    public static func isTrusted(
        providerId: String, email: String, providerSaysVerified: Bool?, configuredDomains: [String] = []
    ) -> Bool {
        guard providerSaysVerified != false, let at = email.lastIndex(of: "@") else { return false }
        let domain = email[email.index(after: at)...].lowercased()
        if alwaysVerifying.contains(providerId) { return true }
        if let domains = trustedDomains[providerId] { return domains.contains(domain) }
        guard isOIDCProviderID(providerId), providerSaysVerified == true else { return false }
        return configuredDomains.contains { $0 == "*" || $0.lowercased() == domain }
    }
}

/// Who a provider says the user is, after its credential was verified.
public struct FederatedIdentity: Codable, Sendable, Equatable {
    public var providerId: String
    /// The provider's stable user id (`sub`, or the user-info `id`).
    public var rawId: String
    /// Lower-cased.
    public var email: String?
    /// What the provider says about the email; nil when it says nothing.
    public var emailVerified: Bool?
    public var displayName: String?
    public var photoUrl: String?
    public var screenName: String?

    public init(
        providerId: String, rawId: String, email: String? = nil, emailVerified: Bool? = nil,
        displayName: String? = nil, photoUrl: String? = nil, screenName: String? = nil
    ) {
        self.providerId = providerId
        self.rawId = rawId
        self.email = email
        self.emailVerified = emailVerified
        self.displayName = displayName
        self.photoUrl = photoUrl
        self.screenName = screenName
    }
}
