import Foundation
import TesseraShared

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Everything the command line writes: results to stdout (a table, or one JSON document with
/// `--json`), notes, progress and errors to stderr.
enum Output {
    static func line(_ text: String = "") {
        print(text)
    }

    /// A remark for the person at the terminal (stderr, so that stdout stays the result).
    static func note(_ text: String) {
        writeStderr(text + "\n")
    }

    static func error(_ error: CLIError) {
        writeStderr("tessera: \(error)\n")
    }

    static func writeStderr(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func json(_ value: JSONValue) throws {
        print(try JSON.pretty(value))
    }

    static var stdoutIsTerminal: Bool { isatty(1) == 1 }
    static var stderrIsTerminal: Bool { isatty(2) == 1 }
    static var stdinIsTerminal: Bool { isatty(0) == 1 }

    /// Asks before something that cannot be undone, unless `--yes` said so already; refuses
    /// (usage, 64) when nobody is at a terminal to answer.
    static func confirm(_ question: String, yes: Bool) throws {
        if yes { return }
        guard stdinIsTerminal else {
            throw CLIError.usage("\(question) Refused without --yes (standard input is not a terminal)")
        }
        writeStderr("\(question) [y/N] ")
        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        guard answer == "y" || answer == "yes" else {
            throw CLIError("CANCELLED", "nothing was changed", status: .failure)
        }
    }
}

/// An aligned text table; cells wider than their column's limit end in "…".
struct Table {
    struct Column {
        var title: String
        var maxWidth: Int

        init(_ title: String, max maxWidth: Int = 40) {
            self.title = title
            self.maxWidth = maxWidth
        }
    }

    var columns: [Column]
    var rows: [[String]] = []

    init(_ columns: [Column]) {
        self.columns = columns
    }

    mutating func add(_ cells: [String]) {
        rows.append(cells)
    }

    static func clip(_ text: String, _ width: Int) -> String {
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        guard flat.count > width else { return flat }
        return String(flat.prefix(max(width - 1, 0))) + "…"
    }

    func render() -> String {
        var widths = columns.map(\.title.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < columns.count {
                widths[index] = max(widths[index], min(cell.count, columns[index].maxWidth))
            }
        }
        func format(_ cells: [String]) -> String {
            var parts: [String] = []
            for (index, column) in columns.enumerated() {
                let cell = Self.clip(index < cells.count ? cells[index] : "", column.maxWidth)
                let last = index == columns.count - 1
                parts.append(last ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0))
            }
            return parts.joined(separator: "  ").replacingOccurrences(
                of: "\\s+$", with: "", options: .regularExpression)
        }
        var lines = [format(columns.map(\.title))]
        lines += rows.map(format)
        return lines.joined(separator: "\n")
    }

    /// Prints the table, or `empty` on stderr when there are no rows.
    func print(empty: String) {
        if rows.isEmpty {
            Output.note(empty)
        } else {
            Output.line(render())
        }
    }
}

/// Key–value lines for one object (`users get`, `tenants get`).
struct Details {
    var pairs: [(String, String)] = []

    mutating func add(_ key: String, _ value: String?) {
        guard let value, !value.isEmpty else { return }
        pairs.append((key, value))
    }

    func print() {
        let width = pairs.map(\.0.count).max() ?? 0
        for (key, value) in pairs {
            Output.line(key.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value)
        }
    }
}

enum Format {
    /// `2026-11-26 12:30:31` (UTC) from milliseconds since the epoch.
    static func millis(_ value: JSONValue?) -> String {
        guard let millis = value?.int64 else { return "" }
        return time(Date(timeIntervalSince1970: Double(millis) / 1000))
    }

    static func time(_ date: Date) -> String {
        let text = RFC3339.seconds(date)
        return text.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: "")
    }

    /// `2026-11-26T12:30:31Z` → `2026-11-26 12:30:31`.
    static func rfc3339(_ value: JSONValue?) -> String {
        guard let text = value?.stringValue else { return "" }
        guard let date = RFC3339.parse(text) else { return text }
        return time(date)
    }

    /// `1h 5m`, `3d 2h`, `45s`.
    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.down))
        if total < 60 { return "\(max(total, 0))s" }
        if total < 3600 { return "\(total / 60)m \(total % 60)s" }
        if total < 86400 { return "\(total / 3600)h \(total % 3600 / 60)m" }
        return "\(total / 86400)d \(total % 86400 / 3600)h"
    }

    static func yesNo(_ value: JSONValue?) -> String {
        value?.boolValue == true ? "yes" : "no"
    }
}
