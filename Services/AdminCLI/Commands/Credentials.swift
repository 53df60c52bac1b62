import ArgumentParser
import Foundation
import TesseraShared

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `tessera credentials …`: scoped admin credentials (docs/protocol/admin.md#tesseras-own-admin-resources).
/// Project admins only.
struct Credentials: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, create and revoke admin credentials.",
        discussion: """
            A credential made without --tenant administers the whole project; with --tenant, only that \
            tenant (its users and settings). The secret is shown once, when it is created; the server \
            keeps only its hash.
            """,
        subcommands: [List.self, Create.self, Revoke.self])

    static func path(_ admin: AdminClient, _ scope: Scope, _ id: String? = nil) -> String {
        admin.path("v2", scope, "/adminCredentials" + (id.map { "/" + AdminClient.segment($0) } ?? ""))
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the live credentials of the project, or of a tenant with --tenant.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let credentials = try await admin.list(
                    Credentials.path(admin, scope.scope), items: "adminCredentials")
                if global.json {
                    try Output.json(.array(credentials))
                } else {
                    var table = Table([
                        .init("CREDENTIAL ID", max: 40), .init("NAME", max: 32), .init("TENANT", max: 32),
                        .init("CREATED", max: 19),
                    ])
                    for credential in credentials {
                        table.add([
                            credential["credentialId"]?.cellText ?? "", credential["displayName"]?.cellText ?? "",
                            credential["tenantId"]?.cellText ?? "(project)", Format.rfc3339(credential["createTime"]),
                        ])
                    }
                    table.print(
                        empty: scope.tenant.map { "no admin credentials of tenant \($0)" }
                            ?? "no project-wide admin credentials")
                }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a credential and print its secret, once.",
            discussion: """
                The secret is printed on stdout (with --json, in the `secret` member), or written to \
                --secret-file (mode 0600) and not printed. Store it now: it cannot be shown again.
                """)

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Option(help: ArgumentHelp("A name that says who or what uses the credential.", valueName: "name"))
        var name: String?
        @Option(help: ArgumentHelp("Write the secret to this new file instead of printing it.", valueName: "file"))
        var secretFile: String?

        func run() async throws {
            try await AdminClient.with(global) { admin in
                var credential = try await admin.call(
                    .POST, Credentials.path(admin, scope.scope), body: .object(["displayName": .string(name ?? "")]))
                let secret = credential["secret"]?.stringValue ?? ""
                if let secretFile {
                    try writePrivateFile(secretFile, Data((secret + "\n").utf8))
                    credential = credential.removing(["secret"])
                }
                if global.json {
                    try Output.json(credential)
                    return
                }
                var details = Details()
                details.add("credential id", credential["credentialId"]?.stringValue)
                details.add("name", credential["displayName"]?.stringValue)
                details.add("scope", credential["tenantId"]?.stringValue.map { "tenant \($0)" } ?? "project")
                details.add("created", Format.rfc3339(credential["createTime"]))
                details.print()
                if let secretFile {
                    Output.line("secret written to \(secretFile)")
                } else {
                    Output.note("the secret, shown only now:")
                    Output.line(secret)
                }
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a credential at once.",
            discussion: "Exit status 2 (CREDENTIAL_NOT_FOUND) when there is no live credential of that id in the scope."
        )

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Argument(help: ArgumentHelp("The credential id (cred-…).", valueName: "credential-id")) var credential: String

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let answer = try await admin.call(.DELETE, Credentials.path(admin, scope.scope, credential))
                if global.json {
                    try Output.json(answer.setting("credentialId", .string(credential)))
                } else {
                    Output.line("revoked \(credential)")
                }
            }
        }
    }
}

/// Creates `path` with mode 0600 (it fails when the file exists) and writes `data`.
func writePrivateFile(_ path: String, _ data: Data) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    guard fd >= 0 else {
        throw CLIError("FILE_ERROR", "cannot create \(path): \(String(cString: strerror(errno)))")
    }
    let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    try handle.write(contentsOf: data)
    try handle.close()
}
