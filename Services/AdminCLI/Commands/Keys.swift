import ArgumentParser
import Foundation
import TesseraShared
import TokenService

/// `tessera keys …`: the token service's key directory on this machine (docs/configuration.md,
/// "Signing keys"). In Kubernetes: a copy of the Secret, changed here and applied back (docs/cli.md).
struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, rotate and prune the signing keys in a key directory.",
        discussion: """
            Works on a local directory of <kid>.pem files, the one the token service reads \
            (TESSERA_SIGNING_KEYS_DIR); --session-cookies works on the session-cookie keys instead \
            (TESSERA_SESSION_COOKIE_KEYS_DIR, by default session-cookies/ inside it). Every key is \
            published; the newest whose Sign-From has passed signs. In Kubernetes, work on a copy of \
            the Secret and apply it back (docs/cli.md).
            """,
        subcommands: [List.self, Rotate.self, Prune.self])

    /// `--dir` and `--session-cookies`, resolved as `token-service keys generate` does.
    struct DirectoryOptions: ParsableArguments {
        @Option(
            help: ArgumentHelp(
                "The key directory (default TESSERA_SIGNING_KEYS_DIR; with --session-cookies, "
                    + "TESSERA_SESSION_COOKIE_KEYS_DIR or the session-cookies/ inside TESSERA_SIGNING_KEYS_DIR).",
                valueName: "dir"))
        var dir: String?
        @Flag(help: "The session-cookie keys, a key set of their own.") var sessionCookies = false

        func directory() throws -> String {
            if let dir { return dir }
            let env = ConfigReader()
            if sessionCookies {
                if let own = env.string("TESSERA_SESSION_COOKIE_KEYS_DIR") { return own }
                if let signing = env.string("TESSERA_SIGNING_KEYS_DIR") {
                    return TokenServiceConfiguration.defaultSessionCookieKeysDirectory(signing)
                }
            } else if let signing = env.string("TESSERA_SIGNING_KEYS_DIR") {
                return signing
            }
            throw CLIError.usage("give --dir or set TESSERA_SIGNING_KEYS_DIR")
        }
    }

    /// One key of the directory and where it stands.
    struct KeyState {
        enum State: String {
            case signing, published, pending
        }
        var kid: String
        var file: String
        /// From the `Tessera-Sign-From` header; nil without one (the key may sign at once).
        var signFrom: Date?
        var modified: Date
        var state: State
        /// When the key could start signing (KeyDirectory.signingStart: its header's time, else its
        /// file's modification time).
        var start: Date
        /// When the next key took over, for keys that signed before the current one (or never did).
        var stoppedSigning: Date?

        func json(now: Date) -> JSONValue {
            JSON.object([
                "kid": .string(kid), "state": .string(state.rawValue), "file": .string(file),
                "signFrom": signFrom.map { .string(RFC3339.seconds($0)) },
                "stoppedSigning": stoppedSigning.map { .string(RFC3339.seconds($0)) },
                "fileModified": .string(RFC3339.seconds(modified)),
                "fileAgeSeconds": .int(Int64(now.timeIntervalSince(modified).rounded(.down))),
            ])
        }
    }

    /// The directory's keys in the token service's order (KeySet: by Sign-From, then kid).
    static func states(in directory: String, now: Date = Date()) throws -> [KeyState] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError.notFound("NOT_FOUND", "no key directory at \(directory)")
        }
        let keys: [SigningKey]
        do {
            keys = try KeyDirectory.load(from: directory)
        } catch {
            throw CLIError("INVALID_KEY", "\(error)")
        }
        guard !keys.isEmpty else { return [] }
        let set = try KeySet(keys: keys, now: now)
        var states: [KeyState] = set.keys.map { key in
            let file = directory + "/" + key.kid + ".pem"
            let modified =
                (try? FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date) ?? now
            let state: KeyState.State =
                key.kid == set.signer.kid ? .signing : key.signFrom > now ? .pending : .published
            return KeyState(
                kid: key.kid, file: file, signFrom: key.signFrom.timeIntervalSince1970 > 0 ? key.signFrom : nil,
                modified: modified, state: state, start: KeyDirectory.signingStart(of: key, in: directory))
        }
        // A key that signed before the current signer stopped when the key after it took over.
        if let signer = states.firstIndex(where: { $0.state == .signing }) {
            for index in 0..<signer {
                states[index].stoppedSigning = states[index + 1].start
            }
        }
        return states
    }

    static func table(_ states: [KeyState], now: Date) -> Table {
        var table = Table([
            .init("KID", max: 48), .init("STATE", max: 9), .init("SIGNS FROM", max: 19),
            .init("STOPPED SIGNING", max: 19), .init("FILE AGE", max: 10),
        ])
        for key in states {
            table.add([
                key.kid, key.state.rawValue, key.signFrom.map(Format.time) ?? "(at once)",
                key.stoppedSigning.map(Format.time) ?? "", Format.duration(now.timeIntervalSince(key.modified)),
            ])
        }
        return table
    }

    // MARK: list

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the keys: kid, state (signing, published, pending), when each signs from, file age.",
            discussion: """
                signing: the key that signs now. published: an older key, still published so that what \
                it signed verifies. pending: published, signing from its Sign-From time.
                """)

        @OptionGroup var directory: DirectoryOptions
        @Flag(help: "Print one JSON document (an array of keys) instead of a table.") var json = false

        func run() async throws {
            let now = Date()
            let path = try directory.directory()
            let states = try Keys.states(in: path, now: now)
            if json {
                try Output.json(.array(states.map { $0.json(now: now) }))
            } else {
                Keys.table(states, now: now).print(empty: "no keys in \(path)")
            }
        }
    }

    // MARK: rotate

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a new key: published at once, signing after --lead (like token-service keys generate).",
            discussion: """
                Give a lead longer than clients cache the key set (the key endpoints' max-age, 1 h), so \
                that every verifier knows the key before it signs. The token service picks the file up \
                at its next reload (TESSERA_KEY_RELOAD_INTERVAL). The file records its Sign-From time \
                even with --lead 0s, so that prune can tell later when it took over.
                """)

        @OptionGroup var directory: DirectoryOptions
        @Option(
            help: ArgumentHelp("How long the key is published before it signs (0s: at once).", valueName: "duration"))
        var lead: String = "1h"
        @Flag(help: "Print the new key as JSON.") var json = false

        func validate() throws {
            guard Duration.parse(lead) != nil else { throw ValidationError("--lead must be a duration such as 1h") }
        }

        func run() async throws {
            let path = try directory.directory()
            let leadTime = Duration.parse(lead) ?? .zero
            let now = Date()
            let kid: String
            do {
                kid = try KeyDirectory.generate(into: path, lead: leadTime, now: now)
            } catch {
                throw CLIError("FILE_ERROR", "\(error)")
            }
            // `generate` dates every key it writes (Tessera-Sign-From), so prune can tell later when
            // it took over.
            let file = path + "/" + kid + ".pem"
            let signFrom = now.addingTimeInterval(leadTime.timeInterval)
            if json {
                try Output.json(
                    .object([
                        "kid": .string(kid), "file": .string(file), "signFrom": .string(RFC3339.seconds(signFrom)),
                    ]))
            } else {
                Output.line(kid)
                Output.note(
                    "published at the token service's next reload; signs from \(Format.time(signFrom)) UTC. "
                        + "`tessera keys prune` removes the previous key once this one has signed for "
                        + (directory.sessionCookies ? "15d" : "2h") + ".")
            }
        }
    }

    // MARK: prune

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove keys that stopped signing long enough ago that nothing they signed is still valid.",
            discussion: """
                A key stopped signing when the next key took over (its Sign-From time; without a header, \
                its file's modification time). Keys that stopped longer than --older-than ago are \
                removed: 2h by default for ID-token keys (tokens live 1 h, key sets are cached 1 h), 15d \
                for session-cookie keys (cookies live up to 14 days). The signing key and pending keys \
                are never removed.
                """)

        @OptionGroup var directory: DirectoryOptions
        @Option(
            help: ArgumentHelp(
                "How long ago a key must have stopped signing (default 2h; 15d with --session-cookies).",
                valueName: "duration"))
        var olderThan: String?
        @Flag(help: "Only say which keys would be removed.") var dryRun = false
        @Flag(help: "Print the outcome as JSON.") var json = false

        func validate() throws {
            if let olderThan, Duration.parse(olderThan) == nil {
                throw ValidationError("--older-than must be a duration such as 2h or 15d")
            }
        }

        func run() async throws {
            let now = Date()
            let path = try directory.directory()
            let threshold =
                olderThan.flatMap(Duration.parse) ?? (directory.sessionCookies ? .seconds(15 * 86400) : .seconds(7200))
            let states = try Keys.states(in: path, now: now)
            var removed: [KeyState] = []
            var kept: [KeyState] = []
            for key in states {
                guard key.state == .published, let stopped = key.stoppedSigning,
                    now.timeIntervalSince(stopped) >= threshold.timeInterval
                else {
                    kept.append(key)
                    continue
                }
                if !dryRun {
                    do {
                        try FileManager.default.removeItem(atPath: key.file)
                    } catch {
                        throw CLIError("FILE_ERROR", "cannot remove \(key.file): \(error.localizedDescription)")
                    }
                }
                removed.append(key)
            }
            if json {
                try Output.json(
                    .object([
                        "dryRun": .bool(dryRun), "removed": .array(removed.map { $0.json(now: now) }),
                        "kept": .array(kept.map { $0.json(now: now) }),
                    ]))
                return
            }
            if removed.isEmpty {
                Output.note(
                    "nothing to prune in \(path) (keys that stopped signing over \(Format.duration(threshold.timeInterval)) ago)"
                )
            }
            for key in removed {
                Output.line(
                    "\(dryRun ? "would remove" : "removed") \(key.kid) (stopped signing \(Format.duration(now.timeIntervalSince(key.stoppedSigning ?? now))) ago)"
                )
            }
        }
    }
}
