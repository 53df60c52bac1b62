import ArgumentParser
import Foundation
import TesseraShared

/// `tessera providers …`: identity-provider configurations of a scope
/// (docs/protocol/federated.md#federated-providers, docs/protocol/admin.md#admin-endpoints):
/// `defaultSupportedIdpConfigs` for the built-in providers, `oauthIdpConfigs` for `oidc.*` ones.
struct Providers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, show, enable, disable and delete identity providers.",
        discussion: """
            Built-in providers: google.com, apple.com, microsoft.com, yahoo.com, facebook.com, github.com, \
            twitter.com. OIDC providers are named oidc.<anything> and need --issuer. A provider is \
            configured per scope (the default scope, or a tenant with --tenant).
            """,
        subcommands: [List.self, Get.self, Enable.self, Disable.self, Delete.self])

    static func isOIDC(_ id: String) -> Bool { id.hasPrefix("oidc.") }

    static func collection(_ id: String) -> String {
        isOIDC(id) ? "oauthIdpConfigs" : "defaultSupportedIdpConfigs"
    }

    static func path(_ admin: AdminClient, _ scope: Scope, _ id: String) -> String {
        admin.path("v2", scope, "/\(collection(id))/\(AdminClient.segment(id))")
    }

    /// The provider id: the last segment of `name`.
    static func id(_ config: JSONValue) -> String {
        config["name"]?.stringValue?.split(separator: "/").last.map(String.init) ?? ""
    }

    /// Every provider configuration of the scope, built-in first.
    static func all(_ admin: AdminClient, _ scope: Scope) async throws -> (builtIn: [JSONValue], oidc: [JSONValue]) {
        let builtIn = try await admin.list(
            admin.path("v2", scope, "/defaultSupportedIdpConfigs"), items: "defaultSupportedIdpConfigs", pageSize: 100)
        let oidc = try await admin.list(
            admin.path("v2", scope, "/oauthIdpConfigs"), items: "oauthIdpConfigs", pageSize: 100)
        return (builtIn, oidc)
    }

    static func table(_ configs: [JSONValue]) -> Table {
        var table = Table([
            .init("PROVIDER", max: 32), .init("ENABLED", max: 7), .init("CLIENT ID", max: 40),
            .init("SECRET", max: 6), .init("ISSUER", max: 48),
        ])
        for config in configs {
            table.add([
                id(config), Format.yesNo(config["enabled"]), config["clientId"]?.cellText ?? "",
                config["clientSecret"]?.stringValue.map { $0.isEmpty ? "no" : "set" } ?? "no",
                config["issuer"]?.cellText ?? "",
            ])
        }
        return table
    }

    static func details(_ config: JSONValue) {
        var details = Details()
        details.add("provider", id(config))
        details.add("name", config["name"]?.stringValue)
        details.add("enabled", Format.yesNo(config["enabled"]))
        details.add("client id", config["clientId"]?.stringValue)
        details.add(
            "client secret", config["clientSecret"]?.stringValue.map { $0.isEmpty ? "not set" : "set" } ?? "not set")
        details.add("issuer", config["issuer"]?.stringValue)
        details.add("display name", config["displayName"]?.stringValue)
        if let response = config["responseType"] {
            let flows = [("idToken", "id token"), ("code", "code")].filter { response[$0.0]?.boolValue == true }
            details.add("flows", flows.map(\.1).joined(separator: ", "))
        }
        details.add("trusted email domains", config["trustedEmailDomains"]?.cellText)
        details.print()
    }

    /// The shown form: the client secret's value stays on the server's side of the terminal.
    static func shown(_ config: JSONValue) -> JSONValue {
        guard config["clientSecret"] != nil else { return config }
        return config.setting("clientSecret", .string("(set)"))
    }

    // MARK: verbs

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the scope's provider configurations.",
            discussion: "Client secrets show as (set); the export carries their values.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let (builtIn, oidc) = try await Providers.all(admin, scope.scope)
                let configs = (builtIn + oidc).map(Providers.shown)
                if global.json {
                    try Output.json(.array(configs))
                } else {
                    Providers.table(configs).print(empty: "no identity providers configured in \(scope.scope.label)")
                }
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one provider's configuration.",
            discussion: "Exit status 2 (CONFIGURATION_NOT_FOUND) when the provider is not configured.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Argument(help: ArgumentHelp("The provider id (google.com, oidc.corp, …).", valueName: "provider-id"))
        var provider: String

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let config = try await admin.call(.GET, Providers.path(admin, scope.scope, provider))
                if global.json {
                    try Output.json(Providers.shown(config))
                } else {
                    Providers.details(Providers.shown(config))
                }
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Configure and enable a provider (created when absent, updated when present).",
            discussion: """
                A new configuration needs --client-id (and --issuer for oidc.*). github.com and \
                facebook.com need their client secret too. Give secrets with --client-secret-file (a \
                file, or - for standard input) rather than on the command line.
                """)

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Argument(help: ArgumentHelp("The provider id (google.com, oidc.corp, …).", valueName: "provider-id"))
        var provider: String
        @Option(help: ArgumentHelp("The client id the provider issued to the app.", valueName: "id")) var clientId:
            String?
        @Option(help: ArgumentHelp("The client secret; prefer --client-secret-file.", valueName: "secret"))
        var clientSecret: String?
        @Option(help: ArgumentHelp("Read the client secret from this file (- for standard input).", valueName: "file"))
        var clientSecretFile: String?
        @Option(help: ArgumentHelp("The OIDC issuer URL (oidc.* only).", valueName: "url")) var issuer: String?
        @Option(help: ArgumentHelp("A display name (oidc.* only).", valueName: "name")) var displayName: String?
        @Option(
            name: .customLong("trusted-domain"),
            help: ArgumentHelp(
                "An email domain this OIDC provider verifies (repeatable; * for all).", valueName: "domain"))
        var trustedDomains: [String] = []

        func validate() throws {
            if clientSecret != nil, clientSecretFile != nil {
                throw ValidationError("give --client-secret or --client-secret-file, not both")
            }
            if !Providers.isOIDC(provider), issuer != nil || displayName != nil || !trustedDomains.isEmpty {
                throw ValidationError("--issuer, --display-name and --trusted-domain are for oidc.* providers")
            }
        }

        func run() async throws {
            let secret = try clientSecretFile.map { try readSecretFile($0, what: "client secret") } ?? clientSecret
            var fields: [String: JSONValue] = ["enabled": .bool(true)]
            var mask = ["enabled"]
            func set(_ key: String, _ value: JSONValue?) {
                guard let value else { return }
                fields[key] = value
                mask.append(key)
            }
            set("clientId", clientId.json)
            set("clientSecret", secret.json)
            set("issuer", issuer.json)
            set("displayName", displayName.json)
            set("trustedEmailDomains", trustedDomains.isEmpty ? nil : .array(trustedDomains.map(JSONValue.string)))
            try await AdminClient.with(global) { admin in
                let path = Providers.path(admin, scope.scope, provider)
                var existing = true
                do {
                    _ = try await admin.call(.GET, path)
                } catch let error as CLIError where error.code == "CONFIGURATION_NOT_FOUND" {
                    existing = false
                }
                let config: JSONValue
                if existing {
                    config = try await admin.call(
                        .PATCH, path, query: [("updateMask", mask.joined(separator: ","))], body: .object(fields))
                } else {
                    guard clientId != nil else {
                        throw CLIError.usage(
                            "\(provider) is not configured in \(scope.scope.label) yet: give --client-id")
                    }
                    let collection = Providers.collection(provider)
                    let idParameter = Providers.isOIDC(provider) ? "oauthIdpConfigId" : "idpId"
                    config = try await admin.call(
                        .POST, admin.path("v2", scope.scope, "/\(collection)"), query: [(idParameter, provider)],
                        body: .object(fields))
                }
                if global.json {
                    try Output.json(Providers.shown(config))
                } else {
                    Output.line(
                        "\(existing ? "updated and enabled" : "configured and enabled") \(provider) in \(scope.scope.label)"
                    )
                }
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable a provider, keeping its configuration.",
            discussion: "Sign-ins with it answer OPERATION_NOT_ALLOWED until it is enabled again.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Argument(help: ArgumentHelp("The provider id.", valueName: "provider-id")) var provider: String

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let config = try await admin.call(
                    .PATCH, Providers.path(admin, scope.scope, provider), query: [("updateMask", "enabled")],
                    body: .object(["enabled": .bool(false)]))
                if global.json {
                    try Output.json(Providers.shown(config))
                } else {
                    Output.line("disabled \(provider) in \(scope.scope.label)")
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a provider's configuration.",
            discussion:
                "Users keep their links to the provider; they cannot sign in with it until it is configured again.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Argument(help: ArgumentHelp("The provider id.", valueName: "provider-id")) var provider: String

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let answer = try await admin.call(.DELETE, Providers.path(admin, scope.scope, provider))
                if global.json {
                    try Output.json(answer.setting("providerId", .string(provider)))
                } else {
                    Output.line("deleted \(provider) from \(scope.scope.label)")
                }
            }
        }
    }
}
