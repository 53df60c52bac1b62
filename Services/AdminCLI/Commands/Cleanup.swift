import ArgumentParser
import Foundation
import TesseraShared

/// `tessera cleanup …`: the anonymous-account cleanup of a scope (docs/protocol/admin.md#anonymous-cleanup,
/// #tesseras-own-admin-resources).
struct Cleanup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Preview and inspect the anonymous-account cleanup.",
        discussion: """
            The cleanup worker deletes anonymous accounts whose retention has passed in scopes with \
            autodeleteAnonymousUsers on (tessera tenants update T --autodelete-anonymous).
            """,
        subcommands: [Preview.self, Status.self])

    enum Bucket: String, ExpressibleByArgument, CaseIterable {
        case day, hour
    }

    struct Preview: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "How many anonymous accounts turning autodelete on would affect, and when they fall due.",
            discussion: "Changes nothing.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions
        @Option(help: ArgumentHelp("Count the due accounts per day or per hour.", valueName: "day|hour"))
        var bucket: Bucket = .day

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let preview = try await admin.call(
                    .GET, admin.path("v2", scope.scope, "/anonymousCleanup:preview"),
                    query: [("bucket", bucket.rawValue)])
                if global.json {
                    try Output.json(preview)
                    return
                }
                var details = Details()
                details.add("scope", scope.scope.label)
                details.add("anonymous accounts", preview["anonymousUsers"]?.cellText ?? "0")
                details.add("already scheduled", preview["alreadyScheduled"]?.cellText ?? "0")
                details.add("first due", Format.rfc3339(preview["firstDueTime"]))
                details.print()
                let buckets = preview["buckets"]?.arrayValue ?? []
                guard !buckets.isEmpty else { return }
                Output.line()
                var table = Table([.init("DUE BEFORE", max: 19), .init("ACCOUNTS", max: 12)])
                for entry in buckets {
                    table.add([Format.rfc3339(entry["dueBefore"]), entry["count"]?.cellText ?? ""])
                }
                table.print(empty: "")
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Whether the cleanup is on, the retention, the last sweep and what is scheduled.")

        @OptionGroup(title: "Connection and output") var global: GlobalOptions
        @OptionGroup var scope: ScopeOptions

        func run() async throws {
            try await AdminClient.with(global) { admin in
                let status = try await admin.call(.GET, admin.path("v2", scope.scope, "/anonymousCleanup"))
                if global.json {
                    try Output.json(status)
                    return
                }
                var details = Details()
                details.add("scope", scope.scope.label)
                details.add("enabled", Format.yesNo(status["enabled"]))
                details.add("retention", status["retention"]?.cellText)
                details.add("scheduled", status["scheduled"]?.cellText ?? "0")
                details.add("last sweep", Format.rfc3339(status["lastSweepTime"]))
                details.add("last sweep deleted", status["lastSweepDeleted"]?.cellText ?? "0")
                details.add("deleted in total", status["totalDeleted"]?.cellText ?? "0")
                details.print()
            }
        }
    }
}
