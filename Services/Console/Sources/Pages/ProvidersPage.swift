/// A scope's identity providers: the built-in ones and its OIDC providers, each with its form, and
/// the form that adds an OIDC provider (`providers`).
public struct ProvidersPage: ConsolePage {
    public static let template = "providers"
    let title = "Identity providers"
    let chrome: ConsoleChrome
    let notice: String?
    /// Where every provider sends its answer; the rows read it from the page.
    let redirectUri: String
    let publicURLUnset: Bool
    let builtIn: [BuiltIn]
    let oidc: [OIDC]
    /// Why the new-provider form was refused.
    let newError: String?

    public init(
        chrome: ConsoleChrome, notice: String?, redirectUri: String, publicURLUnset: Bool, builtIn: [BuiltIn],
        oidc: [OIDC], newError: String?
    ) {
        self.chrome = chrome
        self.notice = notice
        self.redirectUri = redirectUri
        self.publicURLUnset = publicURLUnset
        self.builtIn = builtIn
        self.oidc = oidc
        self.newError = newError
    }

    /// A built-in provider's form.
    public struct BuiltIn: Sendable {
        let id: String
        let label: String
        /// The id as an HTML id (dots as hyphens).
        let field: String
        let enabled: Bool
        let clientId: String
        let secretSet: Bool
        /// The email domains whose addresses its sign-in verifies, in words.
        let trustedFor: String
        /// Apple's code-flow key (apple.com only).
        let apple: Apple?
        let error: String?

        public init(
            id: String, label: String, field: String, enabled: Bool, clientId: String, secretSet: Bool,
            trustedFor: String, apple: Apple?, error: String?
        ) {
            self.id = id
            self.label = label
            self.field = field
            self.enabled = enabled
            self.clientId = clientId
            self.secretSet = secretSet
            self.trustedFor = trustedFor
            self.apple = apple
            self.error = error
        }
    }

    /// Sign in with Apple's key for the code flow: its ids, and whether the key is set (never shown).
    public struct Apple: Sendable {
        let teamId: String
        let keyId: String
        let keySet: Bool

        public init(teamId: String, keyId: String, keySet: Bool) {
            self.teamId = teamId
            self.keyId = keyId
            self.keySet = keySet
        }
    }

    /// An OIDC provider's forms.
    public struct OIDC: Sendable {
        let id: String
        /// The id as an HTML id (dots as hyphens).
        let field: String
        let name: String
        let issuer: String
        let clientId: String
        let enabled: Bool
        /// Its trusted email domains, as the form shows them.
        let domains: String
        /// Its response type in words.
        let flow: String
        let error: String?

        public init(
            id: String, field: String, name: String, issuer: String, clientId: String, enabled: Bool,
            domains: String, flow: String, error: String?
        ) {
            self.id = id
            self.field = field
            self.name = name
            self.issuer = issuer
            self.clientId = clientId
            self.enabled = enabled
            self.domains = domains
            self.flow = flow
            self.error = error
        }
    }
}
