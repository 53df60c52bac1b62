import ArgumentParser
import Foundation
import TesseraShared

/// `tessera audit`: the audit log of a scope (docs/protocol/admin.md#tesseras-own-admin-resources), newest first.
struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the audit log: admin writes and cleanup sweeps, newest first.",
        discussion: """
            Without --all: the newest --limit entries (50 by default). With --all: every entry, with a \
            progress bar; --limit then caps the total. --actor and --action filter on this side, page \
            after page, until --limit entries matched or the log ends.
            """)

    @OptionGroup(title: "Connection and output") var global: GlobalOptions
    @OptionGroup var scope: ScopeOptions
    @OptionGroup var progress: ProgressOptions

    @Flag(help: "Every entry, page after page.") var all = false
    @Option(help: ArgumentHelp("How many entries at most (default 50 without --all).", valueName: "n")) var limit: Int?
    @Option(
        help: ArgumentHelp(
            "Only entries of this actor (a credential id, bootstrap, owner, system:cleanup).", valueName: "actor"))
    var actor: String?
    @Option(
        help: ArgumentHelp("Only entries whose action contains this text (e.g. accounts:delete).", valueName: "text"))
    var action: String?
    @Option(help: ArgumentHelp("Start after this page token (from an earlier call's stderr).", valueName: "token"))
    var pageToken: String?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func matches(_ entry: JSONValue) -> Bool {
        if let actor, entry["actor"]?.stringValue != actor { return false }
        if let action, !(entry["action"]?.stringValue ?? "").localizedCaseInsensitiveContains(action) { return false }
        return true
    }

    func run() async throws {
        let cap = limit ?? (all ? Int.max : 50)
        let filtered = actor != nil || action != nil
        try await AdminClient.with(global) { admin in
            let path = admin.path("v2", scope.scope, "/auditLog")
            let bar = ProgressBar("audit entries", total: nil, mode: all ? progress.progress : .never)
            var entries: [JSONValue] = []
            var token = pageToken
            var next: String?
            repeat {
                let size = filtered || all ? 1000 : min(cap - entries.count, 1000)
                var query = [("pageSize", String(size))]
                if let token { query.append(("pageToken", token)) }
                let page = try await admin.call(.GET, path, query: query)
                let rows = page["entries"]?.arrayValue ?? []
                bar.advance(by: rows.count)
                entries += rows.filter(matches)
                token = page["nextPageToken"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
                next = token
                // One page unless --all, or a filter that has not found enough yet.
                if !all && !filtered { break }
            } while token != nil && entries.count < cap
            bar.finish()
            if entries.count > cap { entries = Array(entries.prefix(cap)) }
            if !all, let next, !filtered { Output.note("older entries: --page-token \(next)") }
            if global.json {
                try Output.json(.array(entries))
                return
            }
            var table = Table([
                .init("TIME", max: 19), .init("ACTOR", max: 26), .init("ACTION", max: 64), .init("TARGET", max: 48),
            ])
            for entry in entries {
                table.add([
                    Format.rfc3339(entry["time"]), entry["actor"]?.cellText ?? "", entry["action"]?.cellText ?? "",
                    entry["target"]?.cellText ?? "",
                ])
            }
            table.print(empty: "no audit entries\(filtered ? " match" : "") in \(scope.scope.label)")
        }
    }
}
