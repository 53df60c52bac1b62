/// One user: the profile's facts, the edit form, the linked providers, the sessions, the actions
/// and the delete form (`user`).
public struct UserPage: ConsolePage {
    public static let template = "user"
    let title: String
    let chrome: ConsoleChrome
    let notice: String?
    /// The user's email, else display name, else id.
    let heading: String
    /// The id as a path segment (percent-encoded).
    let localIdPath: String
    let badges: [ConsoleBadge]
    let facts: [ConsoleFact]
    let links: [Link]
    let factors: [Factor]
    let sessions: [Session]
    let actions: [Action]
    /// What the delete form must be sent with (the email, else the id), and why it was refused.
    let confirmWord: String
    let deleteError: String?
    /// The edit form's fields; the errors next to them are read from the page.
    let profile: Profile
    let displayNameError: String?
    let emailError: String?
    let phoneNumberError: String?
    let claimsError: String?
    let passwordError: String?

    public init(
        chrome: ConsoleChrome, notice: String?, heading: String, localIdPath: String, badges: [ConsoleBadge],
        facts: [ConsoleFact], links: [Link], factors: [Factor], sessions: [Session], actions: [Action],
        confirmWord: String,
        deleteError: String?, profile: Profile, errors: [String: String]
    ) {
        title = heading
        self.chrome = chrome
        self.notice = notice
        self.heading = heading
        self.localIdPath = localIdPath
        self.badges = badges
        self.facts = facts
        self.links = links
        self.factors = factors
        self.sessions = sessions
        self.actions = actions
        self.confirmWord = confirmWord
        self.deleteError = deleteError
        self.profile = profile
        displayNameError = errors["displayName"]
        emailError = errors["email"]
        phoneNumberError = errors["phoneNumber"]
        claimsError = errors["claims"]
        passwordError = errors["password"]
    }

    /// A provider the user signs in with.
    public struct Link: Sendable {
        let providerId: String
        let rawId: String
        let email: String

        public init(providerId: String, rawId: String, email: String) {
            self.providerId = providerId
            self.rawId = rawId
            self.email = email
        }
    }

    /// A second factor, with its remove button (a POST to `…/users/{localId}/factors/{id}/remove`).
    public struct Factor: Sendable {
        let kind: String
        let name: String
        let enrolled: String
        let enrollmentId: String
        let enrollmentIdPath: String

        public init(kind: String, name: String, enrolled: String, enrollmentId: String, enrollmentIdPath: String) {
            self.kind = kind
            self.name = name
            self.enrolled = enrolled
            self.enrollmentId = enrollmentId
            self.enrollmentIdPath = enrollmentIdPath
        }
    }

    /// A sign-in session (a refresh-token family), its times in words.
    public struct Session: Sendable {
        let provider: String
        let started: String
        let lastRefresh: String
        let ends: String
        let state: String

        public init(provider: String, started: String, lastRefresh: String, ends: String, state: String) {
            self.provider = provider
            self.started = started
            self.lastRefresh = lastRefresh
            self.ends = ends
            self.state = state
        }
    }

    /// An action's button: a POST to `…/users/{localId}/{verb}`.
    public struct Action: Sendable {
        let verb: String
        let label: String

        public init(verb: String, label: String) {
            self.verb = verb
            self.label = label
        }
    }

    /// The edit form's values.
    public struct Profile: Sendable {
        let displayName: String
        let email: String
        let phoneNumber: String
        let claims: String

        public init(displayName: String, email: String, phoneNumber: String, claims: String) {
            self.displayName = displayName
            self.email = email
            self.phoneNumber = phoneNumber
            self.claims = claims
        }
    }
}
