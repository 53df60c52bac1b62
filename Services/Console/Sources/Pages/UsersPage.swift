/// A scope's users: the search, one page of the list, and the new-user form (`users`).
public struct UsersPage: ConsolePage {
    public static let template = "users"
    let title = "Users"
    let chrome: ConsoleChrome
    let notice: String?
    let q: String
    let providers: [ConsoleOption]
    let shows: [ConsoleOption]
    let sorts: [ConsoleOption]
    let countText: String
    let rows: [Row]
    /// The links to the pages before and after this one, where there are.
    let previous: String?
    let next: String?
    /// What the new-user form was sent with, and the errors to show next to its fields.
    let newEmail: String
    let newDisplayName: String
    let newVerified: Bool
    let emailError: String?
    let passwordError: String?
    let displayNameError: String?

    public init(
        chrome: ConsoleChrome, notice: String?, q: String, providers: [ConsoleOption], shows: [ConsoleOption],
        sorts: [ConsoleOption], countText: String, rows: [Row], previous: String?, next: String?, newEmail: String,
        newDisplayName: String, newVerified: Bool, emailError: String?, passwordError: String?,
        displayNameError: String?
    ) {
        self.chrome = chrome
        self.notice = notice
        self.q = q
        self.providers = providers
        self.shows = shows
        self.sorts = sorts
        self.countText = countText
        self.rows = rows
        self.previous = previous
        self.next = next
        self.newEmail = newEmail
        self.newDisplayName = newDisplayName
        self.newVerified = newVerified
        self.emailError = emailError
        self.passwordError = passwordError
        self.displayNameError = displayNameError
    }

    public struct Row: Sendable {
        let localId: String
        /// The id as a path segment (percent-encoded).
        let localIdPath: String
        let emailText: String
        let providers: String
        let created: String
        let lastSignIn: String
        let badges: [ConsoleBadge]

        public init(
            localId: String, localIdPath: String, emailText: String, providers: String, created: String,
            lastSignIn: String, badges: [ConsoleBadge]
        ) {
            self.localId = localId
            self.localIdPath = localIdPath
            self.emailText = emailText
            self.providers = providers
            self.created = created
            self.lastSignIn = lastSignIn
            self.badges = badges
        }
    }
}

/// Moving a scope's users in and out (`transfer`).
public struct TransferPage: ConsolePage {
    public static let template = "transfer"
    let title = "Import and export"
    let chrome: ConsoleChrome
    /// The scope's own scrypt parameters, shown next to the import's.
    let rounds: Int
    let memCost: Int

    public init(chrome: ConsoleChrome, rounds: Int, memCost: Int) {
        self.chrome = chrome
        self.rounds = rounds
        self.memCost = memCost
    }
}
