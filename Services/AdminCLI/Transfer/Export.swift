import ArgumentParser
import Foundation
import TesseraShared

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `tessera export`: one scope — its users with their password hashes, its settings, identity
/// providers and mail templates — as one JSON file (TransferFormat), written page by page.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Export a tenant (or the default scope): users with password hashes, settings, providers, mail templates.",
        discussion: """
            Writes one JSON file: `users` in the Firebase CLI's auth:export format (so `firebase \
            auth:import` reads it, with the hash parameters of `hashConfig`), `hashConfig` (the scope's \
            SCRYPT parameters), and `tessera` (the tenant's settings, its identity providers with their \
            client secrets, its mail templates, and per user what Firebase's format cannot carry). \
            The file holds password hashes and secrets: it is created with mode 0600, and written to \
            standard output only when asked (--output -). Users are read 1,000 at a time; users \
            created or changed during the export may or may not be in it. `tessera import` reads it.
            """)

    @OptionGroup(title: "Connection and output") var global: GlobalOptions
    @OptionGroup var scope: ScopeOptions
    @OptionGroup var progress: ProgressOptions

    @Option(
        name: [.short, .long],
        help: ArgumentHelp(
            "The file to write (mode 0600, replaced if it exists), or - for standard output.", valueName: "file"))
    var output: String?

    func run() async throws {
        let destination = output ?? "-"
        if destination == "-", output == nil, Output.stdoutIsTerminal {
            throw CLIError.usage("the export holds password hashes: give --output FILE (or --output - to print it)")
        }
        try await AdminClient.with(global) { admin in
            let sink = try ExportSink(destination)
            do {
                let summary = try await write(admin, to: sink)
                try sink.commit()
                let place = destination == "-" ? "standard output" : destination
                Output.note(
                    "exported \(summary.users) users (\(summary.extras) with Tessera-only data), \(summary.providers) "
                        + "identity providers and \(summary.templates) mail templates of \(scope.scope.label) to \(place)"
                )
                if summary.withheld > 0 {
                    Output.note(Self.withheldNote(summary.withheld))
                }
                if summary.unmovableFactors > 0 {
                    Output.note(
                        "\(summary.unmovableFactors) users have TOTP second factors, which are not exported (a seed never "
                            + "leaves its server): imported elsewhere, each signs in with its other factors until it "
                            + "enrols an authenticator again")
                }
            } catch {
                sink.abandon()
                throw error
            }
        }
    }

    /// Why some users were exported without their password (docs/cli.md, "Export format").
    static func withheldNote(_ count: Int) -> String {
        "\(count) users were exported without their password hash: it was made with the project's key, which "
            + "a tenant's export never carries. Each is re-hashed with the tenant's key at the user's next "
            + "sign-in; imported elsewhere before that, the user must reset the password"
    }

    struct Summary {
        var users = 0
        var extras = 0
        /// Users whose password hash the server withheld (TransferFormat.withheldKey).
        var withheld = 0
        /// Users with a TOTP second factor, which the export leaves out.
        var unmovableFactors = 0
        var providers = 0
        var templates = 0
    }

    func write(_ admin: AdminClient, to sink: ExportSink) async throws -> Summary {
        let target = scope.scope
        var summary = Summary()
        // The scope's settings and the parameters its hashes need.
        var tenant: JSONValue = .null
        var projectConfig: JSONValue?
        let hashConfig: JSONValue?
        if let tenantID = target.tenantID {
            let answer = try await admin.call(.GET, Tenants.path(admin, tenantID))
            hashConfig = answer["hashConfig"]
            tenant = answer.removing(["hashConfig"])
        } else {
            let answer = try await admin.call(.GET, admin.path("v2", .project, "/config"))
            hashConfig = answer["signIn"]?["hashConfig"]
            let signIn = answer["signIn"]?.removing(["hashConfig"])
            projectConfig = answer.setting("signIn", signIn)
        }
        guard let hashConfig else {
            throw CLIError(
                "MISSING_HASH_CONFIG",
                "the server did not return the hash parameters of \(target.label) (a project admin credential sees them)"
            )
        }
        let (builtIn, oidc) = try await Providers.all(admin, target)
        summary.providers = builtIn.count + oidc.count
        let templates =
            try await admin.call(.GET, admin.path("v2", target, "/mailTemplates"))["templates"] ?? .array([])
        summary.templates = templates.arrayValue?.count ?? 0
        let count = try await admin.call(
            .POST, admin.path("v1", target, "/accounts:query"), body: .object(["returnUserInfo": .bool(false)]))
        let bar = ProgressBar("export", total: count["recordsCount"]?.int64.map { Int($0) }, mode: progress.progress)

        // Users, page by page; what only Tessera carries is kept aside and appended at the end.
        let extras = try ExportSink.scratch()
        defer { extras.abandon() }
        try sink.write("{\"users\":[")
        var token: String?
        repeat {
            var query = [("maxResults", "1000"), ("tesseraForeignHashes", "true")]
            if let token { query.append(("nextPageToken", token)) }
            let page = try await admin.call(.GET, admin.path("v1", target, "/accounts:batchGet"), query: query)
            let users = page["users"]?.arrayValue ?? []
            for user in users {
                let (firebase, extra) = TransferFormat.split(user)
                try sink.write((summary.users == 0 ? "\n" : ",\n") + JSON.compact(firebase))
                summary.users += 1
                if TransferFormat.hasUnmovableFactor(user) { summary.unmovableFactors += 1 }
                if let extra {
                    try extras.write((summary.extras == 0 ? "\n" : ",\n") + JSON.compact(extra))
                    summary.extras += 1
                    if TransferFormat.isWithheld(extra) { summary.withheld += 1 }
                }
            }
            bar.advance(by: users.count)
            token = users.isEmpty ? nil : page["nextPageToken"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        } while token != nil
        bar.finish()

        let tessera: [String: JSONValue?] = [
            "version": .int(TransferFormat.version), "exportedAt": .string(RFC3339.seconds(Date())),
            "projectId": .string(admin.projectID), "tenant": tenant, "projectConfig": projectConfig,
            "providers": .object(["defaultSupportedIdpConfigs": .array(builtIn), "oauthIdpConfigs": .array(oidc)]),
            "mailTemplates": templates,
        ]
        // `tessera` with its `users` last, streamed from the scratch file.
        var head = try JSON.compact(JSON.object(tessera))
        head.removeLast()  // the closing brace
        try sink.write("\n],\n\"hashConfig\":" + JSON.compact(hashConfig) + ",\n\"tessera\":" + head + ",\"users\":[")
        try extras.copy(into: sink)
        try sink.write("\n]}}\n")
        return summary
    }
}

/// Where the export goes: a new private file next to the destination, renamed over it at the end
/// (a failed export leaves no half file), or standard output.
final class ExportSink {
    private let handle: FileHandle
    private let temporary: String?
    private let destination: String?
    private var buffer = Data()

    init(_ destination: String) throws {
        if destination == "-" {
            handle = FileHandle.standardOutput
            temporary = nil
            self.destination = nil
            return
        }
        let url = URL(fileURLWithPath: destination)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(
            ".\(url.lastPathComponent).partial-\(getpid())"
        ).path
        handle = try Self.create(temporary)
        self.temporary = temporary
        self.destination = destination
    }

    private init(scratch path: String) throws {
        handle = try Self.create(path)
        temporary = path
        destination = nil
    }

    /// A private scratch file in the temporary directory, removed by `abandon()`.
    static func scratch() throws -> ExportSink {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tessera-export-\(getpid())-\(UUID().uuidString)"
        ).path
        return try ExportSink(scratch: path)
    }

    static func create(_ path: String) throws -> FileHandle {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw CLIError("FILE_ERROR", "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    func write(_ text: String) throws {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 20 { try flush() }
    }

    func flush() throws {
        guard !buffer.isEmpty else { return }
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Appends this (scratch) file's contents to `sink`.
    func copy(into sink: ExportSink) throws {
        try flush()
        try handle.seek(toOffset: 0)
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            try sink.flush()
            try sink.handle.write(contentsOf: chunk)
        }
    }

    /// Flushes, closes, and moves the file into place.
    func commit() throws {
        try flush()
        guard let temporary, let destination else { return }
        try handle.synchronize()
        try handle.close()
        guard rename(temporary, destination) == 0 else {
            throw CLIError("FILE_ERROR", "cannot write \(destination): \(String(cString: strerror(errno)))")
        }
    }

    func abandon() {
        guard let temporary else { return }
        try? handle.close()
        unlink(temporary)
    }
}
