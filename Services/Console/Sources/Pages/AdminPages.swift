/// A scope's audit log, filtered, newest first (`audit`).
public struct AuditPage: ConsolePage {
    public static let template = "audit"
    let title = "Audit log"
    let chrome: ConsoleChrome
    /// The filter's fields.
    let actor: String
    let action: String
    let entries: [Entry]
    /// The link to older entries, when there may be some.
    let older: String?

    public init(chrome: ConsoleChrome, actor: String, action: String, entries: [Entry], older: String?) {
        self.chrome = chrome
        self.actor = actor
        self.action = action
        self.entries = entries
        self.older = older
    }

    public struct Entry: Sendable {
        let time: String
        let actor: String
        let action: String
        let target: String
        let requestId: String

        public init(time: String, actor: String, action: String, target: String, requestId: String) {
            self.time = time
            self.actor = actor
            self.action = action
            self.target = target
            self.requestId = requestId
        }
    }
}

/// A scope's admin credentials, for project admins (`credentials`).
public struct CredentialsPage: ConsolePage {
    public static let template = "credentials"
    let title = "Admin credentials"
    let chrome: ConsoleChrome
    let notice: String?
    let rows: [Row]
    /// A new credential's secret: in this answer only.
    let newSecret: String?
    /// Why the new-credential form was refused.
    let nameError: String?

    public init(chrome: ConsoleChrome, notice: String?, rows: [Row], newSecret: String?, nameError: String?) {
        self.chrome = chrome
        self.notice = notice
        self.rows = rows
        self.newSecret = newSecret
        self.nameError = nameError
    }

    public struct Row: Sendable {
        let id: String
        let name: String
        let created: String

        public init(id: String, name: String, created: String) {
            self.id = id
            self.name = name
            self.created = created
        }
    }
}

/// A scope's service accounts (`serviceAccounts`).
public struct ServiceAccountsPage: ConsolePage {
    public static let template = "serviceAccounts"
    let title = "Service accounts"
    let chrome: ConsoleChrome
    let notice: String?
    let rows: [Row]
    /// A new account's JSON key file, with its private key: in this answer only.
    let keyFile: String?

    public init(chrome: ConsoleChrome, notice: String?, rows: [Row], keyFile: String?) {
        self.chrome = chrome
        self.notice = notice
        self.rows = rows
        self.keyFile = keyFile
    }

    public struct Row: Sendable {
        let id: String
        let name: String
        let email: String
        let keyId: String
        let created: String

        public init(id: String, name: String, email: String, keyId: String, created: String) {
            self.id = id
            self.name = name
            self.email = email
            self.keyId = keyId
            self.created = created
        }
    }
}
