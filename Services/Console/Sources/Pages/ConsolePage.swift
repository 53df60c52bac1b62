/// A console page's typed view model: the template that renders it (`Templates/<template>.mustache`)
/// and the values the template reads, by their names. Every page extends `layout`, which reads
/// `title`, `chrome` (absent on the pages of no session) and `notice`.
///
/// swift-mustache reads a struct's stored properties by name (`Mirror`) as it reads a dictionary's
/// keys: a nil optional is absent, so a section of it is skipped and a name inside one is looked up
/// in the values around it (a row's form reads `chrome.base` and `chrome.csrf` from its page); a `Bool` is a section's
/// condition; an array is a list; a nested struct is a section's values. Computed properties are not
/// read: every value a template shows is a stored property.
public protocol ConsolePage: Sendable {
    /// The template's name in `ConsoleTemplates`.
    static var template: String { get }
}

/// The console's sections, one link each in a scope's navigation.
public enum ConsoleSection: Sendable {
    case users, methods, providers, templates, cleanup, audit, credentials, serviceAccounts
}

/// What the layout shows around a signed-in page: who is signed in, the sign-out form's CSRF token,
/// and on a scope's pages the scope's navigation with the current section marked.
public struct ConsoleChrome: Sendable {
    let who: String
    let csrf: String
    /// The scope's name in the navigation; nil on pages about no one scope (the scopes, the tenants).
    let scopeName: String?
    /// Where the scope's pages are (`/console/project`, `/console/tenants/{tenant}`).
    let base: String?
    /// Credentials are project resources: only project admins see the link (and the pages).
    let projectAdmin: Bool
    /// The current section, whose link is marked.
    private(set) var onUsers = false
    private(set) var onMethods = false
    private(set) var onProviders = false
    private(set) var onTemplates = false
    private(set) var onCleanup = false
    private(set) var onAudit = false
    private(set) var onCredentials = false
    private(set) var onServiceAccounts = false

    /// A page about no one scope.
    public init(who: String, csrf: String) {
        self.who = who
        self.csrf = csrf
        scopeName = nil
        base = nil
        projectAdmin = false
    }

    /// A page of a scope's `section`.
    public init(
        who: String, csrf: String, scopeName: String, base: String, projectAdmin: Bool, section: ConsoleSection
    ) {
        self.who = who
        self.csrf = csrf
        self.scopeName = scopeName
        self.base = base
        self.projectAdmin = projectAdmin
        switch section {
        case .users: onUsers = true
        case .methods: onMethods = true
        case .providers: onProviders = true
        case .templates: onTemplates = true
        case .cleanup: onCleanup = true
        case .audit: onAudit = true
        case .credentials: onCredentials = true
        case .serviceAccounts: onServiceAccounts = true
        }
    }
}

/// One choice of a `<select>`.
public struct ConsoleOption: Sendable {
    let value: String
    let label: String
    let selected: Bool

    public init(value: String, label: String, selected: Bool) {
        self.value = value
        self.label = label
        self.selected = selected
    }
}

/// A user's state as a badge; `kind` is its CSS class (empty for the plain one).
public struct ConsoleBadge: Sendable {
    let kind: String
    let label: String

    public init(kind: String, label: String) {
        self.kind = kind
        self.label = label
    }
}

/// One line of a list of facts (`<dl class="facts">`).
public struct ConsoleFact: Sendable {
    let name: String
    let value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
