/// A scope's sign-in switches and the project's authorized domains (`methods`).
public struct MethodsPage: ConsolePage {
    public static let template = "methods"
    let title = "Sign-in methods"
    let chrome: ConsoleChrome
    let notice: String?
    let providerSwitches: [Switch]
    let selfService: [Switch]
    /// The project's domains, as a list and as the form's text (what it was sent with when refused).
    let authorizedDomains: [String]
    let domainsText: String
    let domainsError: String?
    /// Whether the domains are the deployment's default (the project sets none of its own).
    let domainsAreDefault: Bool
    /// The domains are the project's: only its page has the form.
    let canEditDomains: Bool
    /// The scope's test numbers and texted regions, as the form shows them.
    let sms: SMSForm

    public init(
        chrome: ConsoleChrome, notice: String?, providerSwitches: [Switch], selfService: [Switch],
        authorizedDomains: [String], domainsText: String, domainsError: String?, domainsAreDefault: Bool,
        canEditDomains: Bool, sms: SMSForm
    ) {
        self.chrome = chrome
        self.notice = notice
        self.providerSwitches = providerSwitches
        self.selfService = selfService
        self.authorizedDomains = authorizedDomains
        self.domainsText = domainsText
        self.domainsError = domainsError
        self.domainsAreDefault = domainsAreDefault
        self.canEditDomains = canEditDomains
        self.sms = sms
    }

    /// The text-message settings form: test numbers one per line with their codes, and which regions are
    /// texted; the errors by their field when the form was refused.
    public struct SMSForm: Sendable {
        let testNumbersText: String
        let testNumbersError: String?
        /// Which of the three region policies is chosen.
        let everyRegion: Bool
        let exceptRegions: Bool
        let onlyRegions: Bool
        let regionsText: String
        let regionsError: String?

        public init(
            testNumbersText: String, testNumbersError: String?, policy: String, regionsText: String,
            regionsError: String?
        ) {
            self.testNumbersText = testNumbersText
            self.testNumbersError = testNumbersError
            everyRegion = policy != "except" && policy != "only"
            exceptRegions = policy == "except"
            onlyRegions = policy == "only"
            self.regionsText = regionsText
            self.regionsError = regionsError
        }
    }

    /// A checkbox of the form: its field name, its label, and whether it is on.
    public struct Switch: Sendable {
        let name: String
        let label: String
        let on: Bool

        public init(name: String, label: String, on: Bool) {
            self.name = name
            self.label = label
            self.on = on
        }
    }
}
