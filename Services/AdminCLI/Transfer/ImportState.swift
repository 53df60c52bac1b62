import Foundation
import TesseraShared

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a resumable import has done (`FILE.import-state.json`, or `--state`): written after every
/// step, so that the same command run again continues where the last run stopped. A batch that was
/// in flight when the run stopped is sent again; its users that went in then answer "localId
/// belongs to an existing account", which counts as already imported.
struct ImportState: Codable {
    struct Source: Codable, Equatable {
        var path: String
        var format: String
        var size: Int64
        /// FNV-1a (64 bit) of the bytes: tells a changed file from the same one, not a secret.
        var fingerprint: String
    }

    struct Target: Codable, Equatable {
        var adminURL: String
        var projectId: String
        /// `default`, `tenant` (an existing tenant named by --tenant) or `create` (--create-tenant).
        var mode: String
        /// The tenant named, or the one this import created.
        var tenantId: String?
    }

    struct Failure: Codable {
        /// `user`, `provider` or `mailTemplate`.
        var kind: String
        var id: String
        var message: String
    }

    var version = 1
    var source: Source
    var target: Target
    var totalUsers: Int
    /// The phases finished: `settings`, `providers`, `mailTemplates`, `users`.
    var finishedPhases: [String] = []
    /// The index in the file's `users` of the first user of the next batch.
    var nextUser = 0
    var batchesDone = 0
    var imported = 0
    var alreadyPresent = 0
    var providersApplied = 0
    var mailTemplatesApplied = 0
    var failures: [Failure] = []
    var createdTenant = false
    var updatedAt = ""

    var finished: Bool { finishedPhases.contains("users") }
    var failedUsers: Int { failures.filter { $0.kind == "user" }.count }

    func has(_ phase: String) -> Bool { finishedPhases.contains(phase) }

    mutating func finish(_ phase: String) {
        if !has(phase) { finishedPhases.append(phase) }
    }

    static func load(_ path: String) throws -> ImportState? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("FILE_ERROR", "cannot read the state file \(path)")
        }
        do {
            return try JSONDecoder().decode(ImportState.self, from: data)
        } catch {
            throw CLIError.usage("\(path) is not an import state file: remove it or give --state another file")
        }
    }

    /// Written to a new file, then renamed over the old one: a run killed while writing leaves the
    /// previous state, never half of one.
    mutating func save(_ path: String) throws {
        updatedAt = RFC3339.seconds(Date())
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(self)
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let handle = try ExportSink.create(temporary)
        try handle.write(contentsOf: data)
        try handle.synchronize()
        try handle.close()
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw CLIError("FILE_ERROR", "cannot write the state file \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func fingerprint(_ data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        data.withUnsafeBytes { raw in
            for byte in raw {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
        }
        return String(hash, radix: 16)
    }
}
