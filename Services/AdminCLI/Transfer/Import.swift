import ArgumentParser
import Foundation
import TesseraShared

/// `tessera import`: an export (TransferFormat) into this or another deployment, or a Firebase CLI
/// export with its project's hash parameters; resumable (ImportState).
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import an export (or a Firebase CLI export) into a tenant or the default scope; resumable.",
        discussion: """
            A Tessera export (tessera export): applies the scope's settings (to the tenant named by \
            --tenant, to a new tenant with --create-tenant, or to the default scope), creates or \
            updates its identity providers and mail templates, then imports the users with \
            accounts:batchCreate in batches of up to 1,000: users with a password hash with the file's \
            hashConfig, users whose hash the source scope's config does not describe grouped by their \
            own hash settings, the rest without. Passwords keep working: the server verifies the \
            imported hashes and re-hashes them at the next sign-in.

            A Firebase CLI export (firebase auth:export users.json): --from-firebase users.json with \
            the Firebase project's hash parameters, from --hash-config FILE (the console's hash_config \
            block, or JSON) and/or the flags of firebase auth:import.

            RESUMING: progress is kept in a state file (FILE.import-state.json, or --state) after \
            every step. Run the same command again after an interruption and it continues with the \
            batch that was in flight; users of it that went in already count as already present, \
            never as duplicates or failures. A tenant made by --create-tenant is made once. The state \
            file records the source file and the target; it refuses another file or target.

            The summary counts users imported, already present and failed (with each reason); exit \
            status 4 when any user, provider or mail template failed.
            """)

    @OptionGroup(title: "Connection and output") var global: GlobalOptions
    @OptionGroup var scope: ScopeOptions
    @OptionGroup var progress: ProgressOptions

    @Argument(help: ArgumentHelp("The export file (tessera export) to import.", valueName: "file"))
    var file: String?
    @Option(help: ArgumentHelp("Import a Firebase CLI export (JSON) instead.", valueName: "users.json"))
    var fromFirebase: String?
    @Flag(help: "Create a new tenant for the import (its settings from the export); the server names it.")
    var createTenant = false
    @Option(
        help: ArgumentHelp("The created tenant's display name (default: the exported tenant's).", valueName: "name"))
    var displayName: String?
    @Flag(help: "Import the users only: leave the target's settings, providers and mail templates alone.")
    var usersOnly = false
    @Option(help: ArgumentHelp("The state file (default: <file>.import-state.json).", valueName: "file"))
    var state: String?
    @Option(help: ArgumentHelp("Users per batchCreate call, 1–1000.", valueName: "n")) var batchSize = 1000
    @Option(help: .hidden) var stopAfterBatches: Int?

    @OptionGroup(title: "Firebase hash parameters (with --from-firebase)") var hash: HashOptions

    var hashConfig: String? { hash.hashConfig }

    func validate() throws {
        if (file == nil) == (fromFirebase == nil) {
            throw ValidationError("give the export FILE, or --from-firebase users.json, one of them")
        }
        if createTenant, scope.tenant != nil { throw ValidationError("give --tenant or --create-tenant, not both") }
        if displayName != nil, !createTenant {
            throw ValidationError("--display-name names a tenant --create-tenant makes")
        }
        if fromFirebase == nil, hashConfig != nil || !hash.flagsAreEmpty {
            throw ValidationError(
                "--hash-config and the hash flags are for --from-firebase (an export carries its own)")
        }
        if fromFirebase != nil, createTenant, displayName == nil {
            throw ValidationError("--create-tenant with --from-firebase needs --display-name")
        }
        guard (1...1000).contains(batchSize) else { throw ValidationError("--batch-size must be 1 to 1000") }
        if let stopAfterBatches, stopAfterBatches < 1 { throw ValidationError("--stop-after-batches must be positive") }
    }

    // MARK: the source

    struct Source {
        var path: String
        var format: String
        var data: Data
        var users: [Range<Int>]
        var hash: HashParameters?
        var tessera: JSONValue?
        /// `tessera.users`: what Firebase's format cannot carry, by localId.
        var extras: [String: JSONValue] = [:]
    }

    func loadSource() throws -> Source {
        let path = fromFirebase ?? file ?? ""
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        } catch {
            throw CLIError.usage("cannot read \(path): \(error.localizedDescription)")
        }
        let members: [(name: String, range: Range<Int>)]
        var users: [Range<Int>] = []
        do {
            members = try JSONScanner.members(of: data)
            if let range = members.first(where: { $0.name == "users" })?.range {
                users = try JSONScanner.elements(of: data, in: range)
            }
        } catch {
            throw CLIError.usage("\(path) is not an export: \(error)")
        }
        func member(_ name: String) throws -> JSONValue? {
            guard let range = members.first(where: { $0.name == name })?.range else { return nil }
            do {
                return try JSONScanner.decode(data, range)
            } catch {
                throw CLIError.usage("\(path): `\(name)` is not valid JSON")
            }
        }
        guard members.contains(where: { $0.name == "users" }) else {
            throw CLIError.usage("\(path) has no `users` array: it is not an export")
        }
        var source = Source(path: path, format: fromFirebase == nil ? "tessera" : "firebase", data: data, users: users)
        if fromFirebase != nil {
            var names: [String: String] = [:]
            if let hashConfig {
                guard let data = FileManager.default.contents(atPath: hashConfig) else {
                    throw CLIError.usage("cannot read the hash config \(hashConfig)")
                }
                names = try HashParameters.parse(String(decoding: data, as: UTF8.self))
            }
            source.hash = try HashParameters.from(names, flags: hash)
            if source.hash == nil, let own = try member("hashConfig") { source.hash = HashParameters(hashConfig: own) }
            guard source.hash != nil else {
                throw CLIError.usage(
                    "--from-firebase needs the Firebase project's password hash parameters: --hash-config FILE "
                        + "(the console's hash_config block, or JSON) or --hash-algo/--hash-key/--salt-separator/--rounds/--mem-cost"
                )
            }
            return source
        }
        guard let tessera = try member("tessera"), tessera["version"] != nil else {
            throw CLIError.usage(
                "\(path) has no `tessera` section: for a Firebase CLI export use --from-firebase \(path) --hash-config FILE"
            )
        }
        if let version = tessera["version"]?.intValue, version > TransferFormat.version {
            throw CLIError.usage(
                "\(path) is an export of format version \(version); this tessera reads up to \(TransferFormat.version)")
        }
        source.tessera = tessera
        source.hash = HashParameters(hashConfig: try member("hashConfig"))
        for extra in tessera["users"]?.arrayValue ?? [] {
            if let id = extra["localId"]?.stringValue { source.extras[id] = extra }
        }
        return source
    }

    // MARK: run

    func run() async throws {
        let source = try loadSource()
        let withheld = source.extras.values.filter { TransferFormat.isWithheld($0) }.count
        if withheld > 0 {
            Output.note(
                "\(withheld) users of \(source.path) have no password hash (withheld by the export: made with "
                    + "the source project's key): they are imported without a password and must reset it")
        }
        let statePath = state ?? source.path + ".import-state.json"
        let adminURL = try global.resolvedAdminURL()
        let mode = createTenant ? "create" : scope.tenant != nil ? "tenant" : "default"
        let identity = ImportState.Source(
            path: source.path, format: source.format, size: Int64(source.data.count),
            fingerprint: ImportState.fingerprint(source.data))
        var progressState: ImportState
        if let saved = try ImportState.load(statePath) {
            guard saved.source.size == identity.size, saved.source.fingerprint == identity.fingerprint,
                saved.source.format == identity.format
            else {
                throw CLIError.usage(
                    "\(statePath) records an import of another file (\(saved.source.path)): remove it, or give --state another file"
                )
            }
            let wanted = ImportState.Target(
                adminURL: adminURL, projectId: global.projectID, mode: mode,
                tenantId: mode == "create" ? saved.target.tenantId : scope.tenant)
            guard saved.target == wanted else {
                throw CLIError.usage(
                    "\(statePath) records an import into \(Self.describe(saved.target)), not \(Self.describe(wanted)): "
                        + "run the same command as before, or remove the state file, or give --state another file")
            }
            progressState = saved
            if !saved.finished {
                Output.note(
                    "resuming the import recorded in \(statePath): \(saved.nextUser) of \(saved.totalUsers) users done")
            }
        } else {
            progressState = ImportState(
                source: identity,
                target: .init(adminURL: adminURL, projectId: global.projectID, mode: mode, tenantId: scope.tenant),
                totalUsers: source.users.count)
            try progressState.save(statePath)
        }
        if progressState.finished {
            Output.note("this import was finished already (\(statePath)); remove the state file to import again")
        } else {
            try await AdminClient.with(global) { admin in
                try await perform(admin, source, &progressState, statePath: statePath)
            }
        }
        try report(progressState, statePath: statePath)
    }

    static func describe(_ target: ImportState.Target) -> String {
        let scope =
            switch target.mode {
            case "create": "a tenant created for it" + (target.tenantId.map { " (\($0))" } ?? "")
            case "tenant": "tenant \(target.tenantId ?? "")"
            default: "the default scope"
            }
        return "\(scope) of project \(target.projectId) at \(target.adminURL)"
    }

    func perform(_ admin: AdminClient, _ source: Source, _ st: inout ImportState, statePath: String) async throws {
        let exported = source.tessera?["tenant"].flatMap { $0 == .null ? nil : $0 } ?? source.tessera?["projectConfig"]
        let settings = exported.map(TransferFormat.settings(from:)) ?? []

        // 1. The scope: a new tenant, or the settings of the one named (or of the default scope).
        if !st.has("settings") {
            switch st.target.mode {
            case "create":
                if st.target.tenantId == nil {
                    let name = displayName ?? source.tessera?["tenant"]?["displayName"]?.stringValue
                    guard let name else {
                        throw CLIError.usage(
                            "the export is of the default scope: give --display-name for the new tenant")
                    }
                    let created = try await admin.call(
                        .POST, Tenants.path(admin),
                        body: TransferFormat.body(settings, extra: ["displayName": .string(name)]))
                    guard let id = created["tenantId"]?.stringValue else {
                        throw CLIError("INVALID_RESPONSE", "the created tenant has no tenantId")
                    }
                    st.target.tenantId = id
                    st.createdTenant = true
                    try st.save(statePath)
                    Output.note("created tenant \(id) (recorded in \(statePath))")
                }
            case "tenant":
                let path = Tenants.path(admin, st.target.tenantId ?? "")
                if usersOnly || settings.isEmpty {
                    _ = try await admin.call(.GET, path)  // TENANT_NOT_FOUND early, exit 2
                } else {
                    _ = try await admin.call(
                        .PATCH, path, query: [("updateMask", settings.map(\.path).joined(separator: ","))],
                        body: TransferFormat.body(settings))
                }
            default:
                if !usersOnly, !settings.isEmpty {
                    _ = try await admin.call(
                        .PATCH, admin.path("v2", .project, "/config"),
                        query: [("updateMask", settings.map(\.path).joined(separator: ","))],
                        body: TransferFormat.body(settings))
                }
            }
            st.finish("settings")
            try st.save(statePath)
        }
        let target = Scope(tenantID: st.target.tenantId)

        // 2. Identity providers and 3. mail templates (Tessera exports only).
        if !st.has("providers") {
            if !usersOnly, let providers = source.tessera?["providers"] {
                try await importProviders(admin, target, providers, &st)
            }
            st.finish("providers")
            try st.save(statePath)
        }
        if !st.has("mailTemplates") {
            if !usersOnly, let templates = source.tessera?["mailTemplates"]?.arrayValue {
                try await importTemplates(admin, target, templates, &st)
            }
            st.finish("mailTemplates")
            try st.save(statePath)
        }

        // 4. Users, batch by batch, the state saved after each.
        let bar = ProgressBar("import", total: source.users.count, mode: progress.progress, alreadyDone: st.nextUser)
        var batches = 0
        while st.nextUser < source.users.count {
            let range = st.nextUser..<min(st.nextUser + batchSize, source.users.count)
            try await importBatch(admin, target, source, range, &st)
            st.nextUser = range.upperBound
            st.batchesDone += 1
            try st.save(statePath)
            bar.advance(by: range.count)
            batches += 1
            if let stopAfterBatches, batches >= stopAfterBatches, st.nextUser < source.users.count {
                bar.finish()
                throw CLIError(
                    "STOPPED",
                    "stopped after \(batches) batches as asked (\(st.nextUser) of \(st.totalUsers) users); "
                        + "run the same command again to continue")
            }
        }
        bar.finish()
        st.finish("users")
        try st.save(statePath)
    }

    static let providerPaths: [Bool: String] = [
        false: "enabled,clientId,clientSecret",
        true:
            "enabled,clientId,clientSecret,issuer,displayName,responseType.idToken,responseType.code,trustedEmailDomains",
    ]

    func importProviders(_ admin: AdminClient, _ target: Scope, _ providers: JSONValue, _ st: inout ImportState)
        async throws
    {
        let configs =
            (providers["defaultSupportedIdpConfigs"]?.arrayValue ?? [])
            + (providers["oauthIdpConfigs"]?.arrayValue ?? [])
        for config in configs {
            let id = Providers.id(config)
            guard !id.isEmpty else { continue }
            let oidc = Providers.isOIDC(id)
            let body = config.removing(["name"])
            do {
                do {
                    _ = try await admin.call(
                        .POST, admin.path("v2", target, "/\(Providers.collection(id))"),
                        query: [(oidc ? "oauthIdpConfigId" : "idpId", id)], body: body)
                } catch let error as CLIError where error.code == "CONFIGURATION_EXISTS" {
                    _ = try await admin.call(
                        .PATCH, Providers.path(admin, target, id),
                        query: [("updateMask", Self.providerPaths[oidc] ?? "")],
                        body: body)
                }
                st.providersApplied += 1
            } catch let error as CLIError where Self.isRefusal(error) {
                st.failures.append(.init(kind: "provider", id: id, message: error.description))
            }
        }
    }

    func importTemplates(_ admin: AdminClient, _ target: Scope, _ templates: [JSONValue], _ st: inout ImportState)
        async throws
    {
        for template in templates {
            guard let type = template["requestType"]?.stringValue else { continue }
            let path = admin.path("v2", target, "/mailTemplates/\(AdminClient.segment(type))")
            do {
                if template["custom"]?.boolValue == true {
                    _ = try await admin.call(
                        .PATCH, path,
                        body: JSON.object(["subject": template["subject"], "body": template["body"]]))
                } else {
                    _ = try await admin.call(.DELETE, path)
                }
                st.mailTemplatesApplied += 1
            } catch let error as CLIError where Self.isRefusal(error) {
                st.failures.append(.init(kind: "mailTemplate", id: type, message: error.description))
            }
        }
    }

    /// A 4xx answer about this request: recorded, and the import goes on. Anything else (the plane
    /// unreachable, the credential refused, a server failure) stops it, to be resumed.
    static func isRefusal(_ error: CLIError) -> Bool {
        guard let http = error.httpStatus else { return false }
        return (400..<500).contains(http) && http != 401 && http != 403 && error.code != "TENANT_NOT_FOUND"
    }

    static let alreadyPresent = "localId belongs to an existing account"

    /// One batch of the file's users: one batchCreate per kind of hash settings.
    func importBatch(
        _ admin: AdminClient, _ target: Scope, _ source: Source, _ range: Range<Int>, _ st: inout ImportState
    ) async throws {
        struct Group {
            var settings: HashParameters?
            var users: [JSONValue] = []
            var ids: [String] = []
        }
        var native = Group(settings: source.hash)
        var plain = Group()
        var foreign: [String: Group] = [:]
        var foreignOrder: [String] = []
        for index in range {
            let raw: JSONValue
            do {
                raw = try JSONScanner.decode(source.data, source.users[index])
            } catch {
                st.failures.append(.init(kind: "user", id: "#\(index)", message: "not valid JSON in the file"))
                continue
            }
            let localId = raw["localId"]?.stringValue
            let id = localId ?? "#\(index)"
            let (user, own) = TransferFormat.importUser(raw, extra: localId.flatMap { source.extras[$0] })
            if let own {
                if foreign[own.key] == nil {
                    foreign[own.key] = Group(settings: own)
                    foreignOrder.append(own.key)
                }
                foreign[own.key]?.users.append(user)
                foreign[own.key]?.ids.append(id)
            } else if user["passwordHash"] != nil {
                guard source.hash != nil else {
                    st.failures.append(.init(kind: "user", id: id, message: "a passwordHash without hash parameters"))
                    continue
                }
                native.users.append(user)
                native.ids.append(id)
            } else {
                plain.users.append(user)
                plain.ids.append(id)
            }
        }
        for group in [native] + foreignOrder.compactMap({ foreign[$0] }) + [plain] where !group.users.isEmpty {
            var body = group.settings?.requestFields ?? [:]
            body["users"] = .array(group.users)
            let answer: JSONValue
            do {
                answer = try await admin.call(
                    .POST, admin.path("v1", target, "/accounts:batchCreate"), body: .object(body))
            } catch let error as CLIError where Self.isRefusal(error) {
                // The whole request refused (e.g. hash settings the target does not accept): every user of it failed.
                for id in group.ids { st.failures.append(.init(kind: "user", id: id, message: error.description)) }
                continue
            }
            var failed: Set<Int> = []
            for entry in answer["error"]?.arrayValue ?? [] {
                guard let index = entry["index"]?.intValue.map(Int.init), group.ids.indices.contains(index) else {
                    continue
                }
                failed.insert(index)
                let message = entry["message"]?.stringValue ?? "refused"
                if message.hasPrefix(Self.alreadyPresent) {
                    st.alreadyPresent += 1
                } else {
                    st.failures.append(.init(kind: "user", id: group.ids[index], message: message))
                }
            }
            st.imported += group.users.count - failed.count
        }
    }

    // MARK: summary

    func report(_ st: ImportState, statePath: String) throws {
        let userFailures = st.failures.filter { $0.kind == "user" }
        let otherFailures = st.failures.filter { $0.kind != "user" }
        if global.json {
            try Output.json(
                JSON.object([
                    "source": .string(st.source.path), "format": .string(st.source.format),
                    "stateFile": .string(statePath), "projectId": .string(st.target.projectId),
                    "tenantId": st.target.tenantId.json ?? .null, "createdTenant": .bool(st.createdTenant),
                    "finished": .bool(st.finished),
                    "users": .object([
                        "total": .int(Int64(st.totalUsers)), "imported": .int(Int64(st.imported)),
                        "alreadyPresent": .int(Int64(st.alreadyPresent)), "failed": .int(Int64(userFailures.count)),
                    ]),
                    "providers": .int(Int64(st.providersApplied)),
                    "mailTemplates": .int(Int64(st.mailTemplatesApplied)),
                    "failures": .array(
                        st.failures.map {
                            .object(["kind": .string($0.kind), "id": .string($0.id), "message": .string($0.message)])
                        }),
                ]))
        } else {
            Output.line("Import of \(st.source.path) into \(Self.describe(st.target)):")
            var details = Details()
            if st.createdTenant { details.add("  tenant created", st.target.tenantId) }
            if st.source.format == "tessera" {
                details.add("  identity providers", String(st.providersApplied))
                details.add("  mail templates", String(st.mailTemplatesApplied))
            }
            details.add("  users in the file", String(st.totalUsers))
            details.add("  imported", String(st.imported))
            details.add("  already present", String(st.alreadyPresent))
            details.add("  failed", String(userFailures.count))
            details.print()
            let shown = 20
            for failure in (otherFailures + userFailures).prefix(shown) {
                Output.line("    \(failure.kind) \(failure.id): \(failure.message)")
            }
            if st.failures.count > shown {
                Output.line("    … and \(st.failures.count - shown) more (--json, or the state file \(statePath))")
            }
        }
        if !st.failures.isEmpty {
            throw CLIError(
                "PARTIAL_FAILURE",
                "\(userFailures.count) users, \(otherFailures.count) providers or mail templates failed; the rest was imported",
                status: .partial)
        }
    }
}

/// The hash parameters of a Firebase CLI export: `--hash-config`, and `firebase auth:import`'s flags.
struct HashOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The Firebase project's password hash parameters: the console's hash_config block, or JSON.",
            valueName: "file"))
    var hashConfig: String?
    @Option(
        help: ArgumentHelp(
            "Hash algorithm (SCRYPT, STANDARD_SCRYPT, BCRYPT, PBKDF2_SHA256, HMAC_SHA256, …).", valueName: "algorithm"))
    var hashAlgo: String?
    @Option(help: ArgumentHelp("The hash key (base64_signer_key for SCRYPT).", valueName: "base64")) var hashKey:
        String?
    @Option(help: ArgumentHelp("The salt separator (base64_salt_separator).", valueName: "base64"))
    var saltSeparator: String?
    @Option(help: ArgumentHelp("Hash rounds.", valueName: "n")) var rounds: Int?
    @Option(help: ArgumentHelp("Memory cost (SCRYPT), or CPU/memory cost (STANDARD_SCRYPT).", valueName: "n"))
    var memCost: Int?
    @Option(help: ArgumentHelp("STANDARD_SCRYPT parallelization.", valueName: "n")) var parallelization: Int?
    @Option(help: ArgumentHelp("STANDARD_SCRYPT block size.", valueName: "n")) var blockSize: Int?
    @Option(help: ArgumentHelp("STANDARD_SCRYPT derived key length.", valueName: "n")) var dkLen: Int?
    @Option(help: ArgumentHelp("SALT_FIRST or PASSWORD_FIRST (HMAC and plain digests).", valueName: "order"))
    var hashInputOrder: String?

    /// No `firebase auth:import` hash flag was given (`--hash-config` aside).
    var flagsAreEmpty: Bool {
        hashAlgo == nil && hashKey == nil && saltSeparator == nil && rounds == nil && memCost == nil
            && parallelization == nil && blockSize == nil && dkLen == nil && hashInputOrder == nil
    }
}
