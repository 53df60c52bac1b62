/// The sign-in form (`signIn`), with the reason the last attempt was refused.
public struct SignInPage: ConsolePage {
    public static let template = "signIn"
    let title = "Sign in"
    let error: String?

    public init(error: String? = nil) {
        self.error = error
    }
}

/// A page that cannot be shown, in words for the admin (`error`).
public struct ErrorPage: ConsolePage {
    public static let template = "error"
    let title: String
    let heading: String
    let message: String
    let back = "/console/"
    let backLabel = "Back to the console"

    public init(heading: String, message: String) {
        title = heading
        self.heading = heading
        self.message = message
    }
}

/// The project's default scope and its tenants, for a project admin (`home`).
public struct HomePage: ConsolePage {
    public static let template = "home"
    let title = "Scopes"
    let chrome: ConsoleChrome
    let scopes: [Row]

    public init(chrome: ConsoleChrome, scopes: [Row]) {
        self.chrome = chrome
        self.scopes = scopes
    }

    public struct Row: Sendable {
        let name: String
        let id: String
        /// The scope's pages (`/console/project`, `/console/tenants/{tenant}`).
        let link: String
        /// Its sign-in methods in words.
        let state: String

        public init(name: String, id: String, link: String, state: String) {
            self.name = name
            self.id = id
            self.link = link
            self.state = state
        }
    }
}

/// Every tenant, with the forms that create and delete them (`tenants`).
public struct TenantsPage: ConsolePage {
    public static let template = "tenants"
    let title = "Tenants"
    let chrome: ConsoleChrome
    let notice: String?
    let rows: [Row]
    /// What the new-tenant form was sent with, and why it was refused.
    let displayName: String
    let nameError: String?

    public init(chrome: ConsoleChrome, notice: String?, rows: [Row], displayName: String, nameError: String?) {
        self.chrome = chrome
        self.notice = notice
        self.rows = rows
        self.displayName = displayName
        self.nameError = nameError
    }

    public struct Row: Sendable {
        let id: String
        let name: String
        /// Why the tenant's delete form was refused.
        let deleteError: String?

        public init(id: String, name: String, deleteError: String?) {
            self.id = id
            self.name = name
            self.deleteError = deleteError
        }
    }
}
