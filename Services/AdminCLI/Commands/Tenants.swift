import ArgumentParser
import Foundation
import TesseraShared

/// `tessera tenants …`: the v2 tenants API (docs/protocol/admin.md#admin-endpoints, #self-service-settings).
/// Project admins only.
struct Tenants: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, show, create, update and delete tenants and their sign-in settings.",
        discussion: """
            Each tenant is its own scope of users, settings and providers; tenant ids are made by the \
            server from the display name (`shop-x3k9a`). Needs a project-wide credential.
            """,
        subcommands: [List.self, Get.self, Create.self, Update.self, Delete.self])

    /// The sign-in switches of a tenant, as flags: absent leaves a setting as it is (update) or at
    /// the server's default, off (create).
    struct Settings: ParsableArguments {
        @Flag(
            inversion: .prefixedNo,
            help: "Email/password sign-up and sign-in (allowPasswordSignup).")
        var passwordSignup: Bool?
        @Flag(inversion: .prefixedNo, help: "Passwordless email-link sign-in (enableEmailLinkSignin).")
        var emailLink: Bool?
        @Flag(inversion: .prefixedNo, help: "Anonymous sign-up (enableAnonymousUser).")
        var anonymous: Bool?
        @Flag(
            inversion: .prefixedNo,
            help: "End users may create accounts themselves (--no-self-signup: client.permissions.disabledUserSignup).")
        var selfSignup: Bool?
        @Flag(
            inversion: .prefixedNo,
            help: "End users may delete their accounts (--no-self-deletion: client.permissions.disabledUserDeletion).")
        var selfDeletion: Bool?
        @Flag(
            inversion: .prefixedNo,
            help: "Delete anonymous accounts once their retention has passed (autodeleteAnonymousUsers).")
        var autodeleteAnonymous: Bool?
        @Flag(inversion: .prefixedNo, help: "Turn every sign-in of the tenant off (disableAuth).")
        var disableAuth: Bool?

        /// The tenant body and the update-mask paths of the settings given.
        func body(displayName: String?) -> (JSONValue, [String]) {
            var body: [String: JSONValue] = [:]
            var mask: [String] = []
            func set(_ path: String, _ value: Bool?) {
                guard let value else { return }
                body[path] = .bool(value)
                mask.append(path)
            }
            if let displayName {
                body["displayName"] = .string(displayName)
                mask.append("displayName")
            }
            set("allowPasswordSignup", passwordSignup)
            set("enableEmailLinkSignin", emailLink)
            set("enableAnonymousUser", anonymous)
            set("autodeleteAnonymousUsers", autodeleteAnonymous)
            set("disableAuth", disableAuth)
            var permissions: [String: JSONValue] = [:]
            if let selfSignup {
                permissions["disabledUserSignup"] = .bool(!selfSignup)
                mask.append("client.permissions.disabledUserSignup")
            }
            if let selfDeletion {
                permissions["disabledUserDeletion"] = .bool(!selfDeletion)
                mask.append("client.permissions.disabledUserDeletion")
            }
            if !permissions.isEmpty { body["client"] = .object(["permissions": .object(permissions)]) }
            return (.object(body), mask)
        }
    }

    static func path(_ admin: AdminClient, _ tenant: String? = nil) -> String {
        admin.path("v2", .project, "/tenants" + (tenant.map { "/" + AdminClient.segment($0) } ?? ""))
    }

    static func permission(_ tenant: JSONValue, _ key: String) -> Bool {
        tenant["client"]?["permissions"]?[key]?.boolValue == true
    }

    static func table(_ tenants: [JSONValue]) -> Table {
        var table = Table([
            .init("TENANT ID", max: 40), .init("DISPLAY NAME", max: 24), .init("PASSWORD", max: 8),
            .init("EMAIL LINK", max: 10), .init("ANONYMOUS", max: 9), .init("SELF SIGN-UP", max: 12),
            .init("AUTODELETE", max: 10), .init("AUTH", max: 8),
        ])
        for tenant in tenants {
            table.add([
                tenant["tenantId"]?.cellText ?? "", tenant["displayName"]?.cellText ?? "",
                Format.yesNo(tenant["allowPasswordSignup"]), Format.yesNo(tenant["enableEmailLinkSignin"]),
                Format.yesNo(tenant["enableAnonymousUser"]), permission(tenant, "disabledUserSignup") ? "no" : "yes",
                Format.yesNo(tenant["autodeleteAnonymousUsers"]),
                tenant["disableAuth"]?.boolValue == true ? "disabled" : "on",
            ])
        }
        return table
    }

    static func details(_ tenant: JSONValue) {
        var details = Details()
        details.add("tenant id", tenant["tenantId"]?.stringValue)
        details.add("name", tenant["name"]?.stringValue)
        details.add("display name", tenant["displayName"]?.stringValue)
        details.add("password sign-in", Format.yesNo(tenant["allowPasswordSignup"]))
        details.add("email-link sign-in", Format.yesNo(tenant["enableEmailLinkSignin"]))
        details.add("anonymous sign-up", Format.yesNo(tenant["enableAnonymousUser"]))
        details.add("self sign-up", permission(tenant, "disabledUserSignup") ? "no" : "yes")
        details.add("self deletion", permission(tenant, "disabledUserDeletion") ? "no" : "yes")
        details.add("autodelete anonymous", Format.yesNo(tenant["autodeleteAnonymousUsers"]))
        details.add("auth", tenant["disableAuth"]?.boolValue == true ? "disabled" : "on")
        if let mfa = tenant["mfaConfig"] {
            let providers = (mfa["enabledProviders"]?.arrayValue ?? []).compactMap(\.stringValue)
            let state = mfa["state"]?.stringValue ?? "DISABLED"
            details.add("multi-factor", providers.isEmpty ? state : "\(state) (\(providers.joined(separator: ", ")))")
        }
        if case .object(let limits)? = tenant["rateLimits"] {
            for (key, value) in limits.sorted(by: { $0.key < $1.key }) {
                details.add("rate limit \(key)", value.cellText)
            }
        }
        details.print()
    }

    /// Without the hash parameters (the signer key): `tenants get|create|update` show settings; the
    /// export carries them.
    static func shown(_ tenant: JSONValue) -> JSONValue {
        tenant.removing(["hashConfig"])
    }

    // MARK: verbs

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the project's tenants.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @Option(help: ArgumentHelp("At most this many tenants (default: all).", valueName: "n")) var limit: Int?

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let tenants = try await admin.list(Tenants.path(admin), items: "tenants", limit: limit)
                if global.json {
                    try Output.json(.array(tenants))
                } else {
                    Tenants.table(tenants).print(empty: "no tenants in project \(admin.projectID)")
                }
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a tenant's settings.", discussion: "Exit status 2 (TENANT_NOT_FOUND) when there is none.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @Argument(help: ArgumentHelp("The tenant id.", valueName: "tenant-id")) var tenant: String

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let answer = try await admin.call(.GET, Tenants.path(admin, tenant))
                if global.json { try Output.json(Tenants.shown(answer)) } else { Tenants.details(answer) }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a tenant; prints its id.",
            discussion: """
                The display name is 4–20 characters, a letter first, then letters, digits and hyphens. \
                Every sign-in switch is off unless a flag turns it on.
                """)

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @Option(help: ArgumentHelp("The tenant's display name.", valueName: "name")) var displayName: String
        @OptionGroup(title: "Sign-in settings") var settings: Settings

        func run() async throws {
            let (body, _) = settings.body(displayName: displayName)
            try await AdminClient.with(global) { admin in
                let created = try await admin.call(.POST, Tenants.path(admin), body: body)
                if global.json { try Output.json(Tenants.shown(created)) } else { Tenants.details(created) }
            }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a tenant's display name or sign-in settings.",
            discussion: "Only the settings given change (PATCH with an updateMask of them).")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @Argument(help: ArgumentHelp("The tenant id.", valueName: "tenant-id")) var tenant: String
        @Option(help: ArgumentHelp("A new display name.", valueName: "name")) var displayName: String?
        @OptionGroup(title: "Sign-in settings") var settings: Settings

        func validate() throws {
            if settings.body(displayName: displayName).1.isEmpty {
                throw ValidationError("nothing to change: give --display-name or a sign-in setting")
            }
        }

        func run() async throws {
            let (body, mask) = settings.body(displayName: displayName)
            try await AdminClient.with(global) { admin in
                let updated = try await admin.call(
                    .PATCH, Tenants.path(admin, tenant), query: [("updateMask", mask.joined(separator: ","))],
                    body: body)
                if global.json { try Output.json(Tenants.shown(updated)) } else { Tenants.details(updated) }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a tenant with all its users, settings and providers.",
            discussion: "Asks first unless --yes; without a terminal to ask, --yes is required.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @Argument(help: ArgumentHelp("The tenant id.", valueName: "tenant-id")) var tenant: String
        @Flag(name: [.short, .long], help: "Do not ask for confirmation.") var yes = false

        func run() async throws {
            try Output.confirm("Delete tenant \(tenant) and every user in it?", yes: yes)
            try await AdminClient.with(global) { admin in
                let answer = try await admin.call(.DELETE, Tenants.path(admin, tenant))
                if global.json {
                    try Output.json(answer.setting("tenantId", .string(tenant)))
                } else {
                    Output.line("deleted tenant \(tenant)")
                }
            }
        }
    }
}
