import ArgumentParser
import Foundation
import TesseraShared

/// The options every command takes: where the admin plane is, the credential, the project, and
/// the output form. Environment variables stand in for the options (the option wins).
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .customLong("admin-url"),
        help: ArgumentHelp(
            "The admin plane's base URL (env TESSERA_ADMIN_URL; default http://127.0.0.1:9098).",
            valueName: "url"))
    var adminURL: String?

    @Option(
        name: .customLong("token-file"),
        help: ArgumentHelp(
            "A file holding the admin credential (env TESSERA_ADMIN_TOKEN_FILE; else env TESSERA_ADMIN_TOKEN). "
                + "Never on the command line, where other users could see it.",
            valueName: "file"))
    var tokenFile: String?

    @Option(
        help: ArgumentHelp(
            "The deployment's project id (env TESSERA_PROJECT_ID; default tessera-local).", valueName: "id"))
    var project: String?

    @Option(help: ArgumentHelp("Seconds one call may take before it fails with exit 5.", valueName: "seconds"))
    var timeout: Double = 30

    @Flag(help: "Print the result as one JSON document (objects as the API returns them) instead of a table.")
    var json = false

    static let defaultAdminURL = "http://127.0.0.1:9098"
    static let defaultProject = "tessera-local"

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be 1 to 3600 seconds") }
    }

    var environment: ConfigReader { ConfigReader() }

    var projectID: String {
        project ?? environment.string("TESSERA_PROJECT_ID") ?? Self.defaultProject
    }

    /// The admin URL without a trailing slash; a usage error when it is not an http(s) URL.
    func resolvedAdminURL() throws -> String {
        let raw = adminURL ?? environment.string("TESSERA_ADMIN_URL") ?? Self.defaultAdminURL
        var text = raw.trimmingCharacters(in: .whitespaces)
        while text.hasSuffix("/") { text.removeLast() }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty, url.query == nil
        else {
            throw CLIError.usage(
                "the admin URL \(raw) is not an http:// or https:// URL (--admin-url, TESSERA_ADMIN_URL)")
        }
        return text
    }

    /// The credential: `--token-file`, else TESSERA_ADMIN_TOKEN_FILE, else TESSERA_ADMIN_TOKEN.
    func token() throws -> String {
        let env = environment
        if let path = tokenFile ?? env.string("TESSERA_ADMIN_TOKEN_FILE") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError.usage("cannot read the token file \(path)")
            }
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else { throw CLIError.usage("the token file \(path) is empty") }
            return text
        }
        if let token = env.string("TESSERA_ADMIN_TOKEN") {
            return token.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        throw CLIError(
            "UNAUTHENTICATED",
            "no admin credential: give --token-file, or set TESSERA_ADMIN_TOKEN_FILE or TESSERA_ADMIN_TOKEN",
            status: .unauthorized)
    }

    func client() throws -> AdminClient {
        let baseURL = try resolvedAdminURL()
        if let warning = Self.plainHTTPWarning(baseURL) { Output.note(warning) }
        return AdminClient(
            baseURL: baseURL, projectID: projectID, token: try token(),
            timeout: .milliseconds(Int64(timeout * 1000)))
    }

    /// Said before a credential goes over plain http:// to another machine (issue #35): anyone on
    /// the path reads it. The loopback (the local stack, a tunnel) is quiet.
    static func plainHTTPWarning(_ baseURL: String) -> String? {
        guard let url = WebURL(baseURL), url.scheme == "http", !url.isLoopback else { return nil }
        return "tessera: warning: the admin credential goes to \(url.authority) over plain http://, readable by "
            + "anyone on the network path; use an https:// admin URL (or a tunnel to 127.0.0.1)"
    }
}

/// `--tenant`: the scope of a tenant-scoped command; without it, the project's default scope.
struct ScopeOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The tenant to act in (default: the project's default scope).", valueName: "tenant-id"))
    var tenant: String?

    var scope: Scope { Scope(tenantID: tenant) }

    func validate() throws {
        if let tenant, tenant.isEmpty || tenant.contains("/") {
            throw ValidationError("--tenant must be a tenant id")
        }
    }
}

/// `--progress` for commands that page or batch.
struct ProgressOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Show a progress bar on stderr: auto (only when stderr is a terminal), always (a line per update "
                + "when it is not), or never.",
            valueName: "when"))
    var progress: ProgressMode = .auto
}

/// Reads a secret from a file (`-`: standard input), dropping one trailing line break.
func readSecretFile(_ path: String, what: String) throws -> String {
    let data: Data?
    if path == "-" {
        data = FileHandle.standardInput.readDataToEndOfFile()
    } else {
        data = FileManager.default.contents(atPath: path)
    }
    guard let data else { throw CLIError.usage("cannot read the \(what) file \(path)") }
    var text = String(decoding: data, as: UTF8.self)
    // "\r\n" is one Character in Swift: one removeLast() drops either line break.
    if text.hasSuffix("\r\n") || text.hasSuffix("\n") { text.removeLast() }
    guard !text.isEmpty else { throw CLIError.usage("the \(what) file \(path) is empty") }
    return text
}
