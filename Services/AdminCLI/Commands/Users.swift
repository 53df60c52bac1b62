import ArgumentParser
import Foundation
import TesseraShared

/// `tessera users …`: the admin accounts API (docs/protocol/admin.md#admin-endpoints) of one scope.
struct Users: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, inspect, create, disable, enable, delete users and revoke their sessions.",
        discussion: """
            Users of the project's default scope, or of a tenant with --tenant. Password hashes never \
            appear here (the export carries them).
            """,
        subcommands: [List.self, Get.self, Create.self, Disable.self, Enable.self, Delete.self, Revoke.self])

    /// What `users list`/`get` show of a user: everything but the password hash and salt.
    static func shown(_ user: JSONValue) -> JSONValue {
        user.removing(["passwordHash", "salt"])
    }

    static func providers(_ user: JSONValue) -> String {
        let ids = (user["providerUserInfo"]?.arrayValue ?? []).compactMap { $0["providerId"]?.stringValue }
        if ids.isEmpty { return user["email"] == nil && user["phoneNumber"] == nil ? "anonymous" : "" }
        return ids.joined(separator: ",")
    }

    static func table(_ users: [JSONValue]) -> Table {
        var table = Table([
            .init("UID", max: 40), .init("EMAIL", max: 36), .init("NAME", max: 24), .init("PROVIDERS", max: 28),
            .init("VERIFIED", max: 8), .init("DISABLED", max: 8), .init("CREATED", max: 19),
            .init("LAST SIGN-IN", max: 19),
        ])
        for user in users {
            table.add([
                user["localId"]?.cellText ?? "", user["email"]?.cellText ?? "", user["displayName"]?.cellText ?? "",
                providers(user), Format.yesNo(user["emailVerified"]), Format.yesNo(user["disabled"]),
                Format.millis(user["createdAt"]), Format.millis(user["lastLoginAt"]),
            ])
        }
        return table
    }

    static func details(_ user: JSONValue) {
        var details = Details()
        details.add("uid", user["localId"]?.stringValue)
        details.add("tenant", user["tenantId"]?.stringValue)
        details.add("email", user["email"]?.stringValue)
        details.add("email verified", Format.yesNo(user["emailVerified"]))
        details.add("display name", user["displayName"]?.stringValue)
        details.add("photo URL", user["photoUrl"]?.stringValue)
        details.add("phone", user["phoneNumber"]?.stringValue)
        details.add("disabled", Format.yesNo(user["disabled"]))
        details.add("providers", providers(user))
        for provider in user["providerUserInfo"]?.arrayValue ?? [] {
            let id = provider["providerId"]?.cellText ?? ""
            let raw = provider["rawId"]?.cellText ?? ""
            details.add(
                "  \(id)", [raw, provider["email"]?.cellText ?? ""].filter { !$0.isEmpty }.joined(separator: " "))
        }
        details.add("custom claims", user["customAttributes"]?.stringValue.flatMap { $0 == "{}" ? nil : $0 })
        details.add("created", Format.millis(user["createdAt"]))
        details.add("last sign-in", Format.millis(user["lastLoginAt"]))
        details.add("last refresh", Format.rfc3339(user["lastRefreshAt"]))
        if let since = user["validSince"]?.int64 {
            details.add("tokens valid since", Format.time(Date(timeIntervalSince1970: Double(since))))
        }
        details.print()
    }

    // MARK: list

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List users, one page or all of them (accounts:batchGet).",
            discussion: """
                Users in uid order. Without --all: one page of --limit users (100 by default); the token \
                of the next page is printed on stderr. With --all: every user, 1,000 per call, with a \
                progress bar; --limit then caps the total.
                """)

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @OptionGroup var progress: ProgressOptions

        @Flag(help: "Every user, page after page.") var all = false
        @Option(help: ArgumentHelp("How many users at most (one page: 1–1000, default 100).", valueName: "n"))
        var limit: Int?
        @Option(help: ArgumentHelp("Start after this page token (from an earlier list).", valueName: "token"))
        var pageToken: String?

        func validate() throws {
            if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
            if !all, let limit, limit > 1000 { throw ValidationError("--limit above 1000 needs --all") }
        }

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let path = admin.path("v1", scope.scope, "/accounts:batchGet")
                var users: [JSONValue] = []
                var token = pageToken
                if all {
                    let count = try await admin.call(
                        .POST, admin.path("v1", scope.scope, "/accounts:query"),
                        body: .object(["returnUserInfo": .bool(false)]))
                    let total = count["recordsCount"]?.int64.map { Int($0) }
                    let bar = ProgressBar(
                        "users", total: limit.map { min($0, total ?? $0) } ?? total, mode: progress.progress)
                    repeat {
                        let size = min(1000, limit.map { $0 - users.count } ?? 1000)
                        var query = [("maxResults", String(size))]
                        if let token { query.append(("nextPageToken", token)) }
                        let page = try await admin.call(.GET, path, query: query)
                        let rows = page["users"]?.arrayValue ?? []
                        users += rows.map(Users.shown)
                        bar.advance(by: rows.count)
                        token = rows.isEmpty ? nil : page["nextPageToken"]?.stringValue
                    } while token != nil && users.count < (limit ?? Int.max)
                    bar.finish()
                } else {
                    var query = [("maxResults", String(limit ?? 100))]
                    if let token { query.append(("nextPageToken", token)) }
                    let page = try await admin.call(.GET, path, query: query)
                    users = (page["users"]?.arrayValue ?? []).map(Users.shown)
                    if let next = page["nextPageToken"]?.stringValue, !next.isEmpty {
                        Output.note("next page: --page-token \(next)")
                    }
                }
                if global.json {
                    try Output.json(.array(users))
                } else {
                    Users.table(users).print(empty: "no users in \(scope.scope.label)")
                }
            }
        }
    }

    // MARK: get

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one user, by uid or by email (accounts:lookup).",
            discussion: "Exit status 2 (USER_NOT_FOUND) when there is no such user.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions

        @Argument(help: ArgumentHelp("The user's uid (localId).", valueName: "uid")) var uid: String?
        @Option(help: ArgumentHelp("Find the user by email address instead.", valueName: "email")) var email: String?

        func validate() throws {
            if (uid == nil) == (email == nil) { throw ValidationError("give a uid or --email, one of them") }
        }

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let body: JSONValue =
                    if let uid { .object(["localId": .array([.string(uid)])]) } else {
                        .object(["email": .array([.string(email ?? "")])])
                    }
                let answer = try await admin.call(.POST, admin.path("v1", scope.scope, "/accounts:lookup"), body: body)
                guard let user = answer["users"]?.arrayValue?.first else {
                    throw CLIError.notFound(
                        "USER_NOT_FOUND",
                        "no user \(uid.map { "with uid \($0)" } ?? "with email \(email ?? "")") in \(scope.scope.label)"
                    )
                }
                if global.json { try Output.json(Users.shown(user)) } else { Users.details(user) }
            }
        }
    }

    // MARK: create

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a user (the Admin SDK's create_user; sign-in switches do not apply).",
            discussion: """
                Every field is optional: a user with none is an account with no way to sign in until \
                one is added. Give the password with --password-file (a file, or - for standard \
                input); --password puts it on the command line, where other users may see it.
                """)

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions

        @Option(
            help: ArgumentHelp(
                "The uid to give the user (default: generated; at most 128 characters).", valueName: "uid"))
        var uid: String?
        @Option(help: ArgumentHelp("The user's email address.", valueName: "email")) var email: String?
        @Option(help: ArgumentHelp("The password (6–4096 characters); prefer --password-file.", valueName: "password"))
        var password: String?
        @Option(help: ArgumentHelp("Read the password from this file (- for standard input).", valueName: "file"))
        var passwordFile: String?
        @Option(help: ArgumentHelp("The display name.", valueName: "name")) var displayName: String?
        @Option(help: ArgumentHelp("The phone number, E.164 (+15551234567).", valueName: "number")) var phone: String?
        @Option(help: ArgumentHelp("The photo URL.", valueName: "url")) var photoUrl: String?
        @Flag(help: "Mark the email address verified.") var emailVerified = false
        @Flag(help: "Create the user disabled.") var disabled = false

        func validate() throws {
            if password != nil, passwordFile != nil {
                throw ValidationError("give --password or --password-file, not both")
            }
        }

        func run() async throws {
            let secret = try passwordFile.map { try readSecretFile($0, what: "password") } ?? password
            let body = JSON.object([
                "localId": uid.json, "email": email.json, "password": secret.json, "displayName": displayName.json,
                "phoneNumber": phone.json, "photoUrl": photoUrl.json,
                "emailVerified": emailVerified ? .bool(true) : nil, "disabled": disabled ? .bool(true) : nil,
            ])
            try await AdminClient.with(global) { admin in
                let created = try await admin.call(.POST, admin.path("v1", scope.scope, "/accounts"), body: body)
                if global.json {
                    try Output.json(created)
                } else {
                    var details = Details()
                    details.add("created uid", created["localId"]?.stringValue)
                    details.add("email", created["email"]?.stringValue)
                    details.add("display name", created["displayName"]?.stringValue)
                    details.add("scope", scope.scope.label)
                    details.print()
                }
            }
        }
    }

    // MARK: disable, enable

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable a user: every sign-in and refresh answers USER_DISABLED.",
            discussion: "Disabling also ends the sessions and ID tokens issued before it, for good.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Argument(help: ArgumentHelp("The user's uid.", valueName: "uid")) var uid: String

        func run() async throws {
            try await Users.update(global, scope.scope, uid, ["disableUser": .bool(true)], done: "disabled user \(uid)")
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enable a disabled user again.",
            discussion: "Sessions ended by the disable stay ended: the user signs in again.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Argument(help: ArgumentHelp("The user's uid.", valueName: "uid")) var uid: String

        func run() async throws {
            try await Users.update(global, scope.scope, uid, ["disableUser": .bool(false)], done: "enabled user \(uid)")
        }
    }

    static func update(
        _ global: GlobalOptions, _ scope: Scope, _ uid: String, _ change: [String: JSONValue], done: String
    ) async throws {
        try await AdminClient.with(global) { admin in
            var body = change
            body["localId"] = .string(uid)
            let answer = try await admin.call(.POST, admin.path("v1", scope, "/accounts:update"), body: .object(body))
            if global.json { try Output.json(answer) } else { Output.line(done) }
        }
    }

    // MARK: delete

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a user and everything linked to it.",
            discussion: "Asks first unless --yes; without a terminal to ask, --yes is required.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Argument(help: ArgumentHelp("The user's uid.", valueName: "uid")) var uid: String
        @Flag(name: [.short, .long], help: "Do not ask for confirmation.") var yes = false

        func run() async throws {
            try Output.confirm("Delete user \(uid) from \(scope.scope.label)?", yes: yes)
            try await AdminClient.with(global) { admin in
                let answer = try await admin.call(
                    .POST, admin.path("v1", scope.scope, "/accounts:delete"), body: .object(["localId": .string(uid)]))
                if global.json {
                    try Output.json(answer.setting("localId", .string(uid)))
                } else {
                    Output.line("deleted user \(uid)")
                }
            }
        }
    }

    // MARK: revoke

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a user's refresh tokens and ID tokens (validSince = now).",
            discussion: """
                Tokens issued before the current second stop working (TOKEN_EXPIRED); the user signs in \
                again. As in Firebase, a token issued within the same second stays valid.
                """)

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Argument(help: ArgumentHelp("The user's uid.", valueName: "uid")) var uid: String

        func run() async throws {
            let now = Int64(Date().timeIntervalSince1970.rounded(.down))
            try await Users.update(
                global, scope.scope, uid, ["validSince": .string(String(now))],
                done:
                    "revoked the tokens of user \(uid) issued before \(Format.time(Date(timeIntervalSince1970: Double(now)))) UTC"
            )
        }
    }
}
