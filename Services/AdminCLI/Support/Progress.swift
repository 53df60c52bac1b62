import ArgumentParser
import Foundation

/// `--progress never|auto|always`.
enum ProgressMode: String, ExpressibleByArgument, CaseIterable, Sendable {
    case never, auto, always
}

/// A progress bar on stderr for what pages or batches. On a terminal it redraws one line (`\r`);
/// with `--progress always` and no terminal it prints a line per update instead, so a log keeps
/// every step. Done/total when the total is known, the rate (items/s) and the time left.
final class ProgressBar {
    private let label: String
    private let total: Int?
    private let enabled: Bool
    private let redraw: Bool
    private let start = Date()
    private var done = 0
    /// Items done before this run (a resumed import): counted in done/total, not in the rate.
    private let base: Int
    private var lastDraw = Date.distantPast
    private var drewOnce = false

    init(_ label: String, total: Int?, mode: ProgressMode, alreadyDone: Int = 0) {
        self.label = label
        self.total = total
        self.base = alreadyDone
        self.done = alreadyDone
        let terminal = Output.stderrIsTerminal
        switch mode {
        case .never: enabled = false
        case .auto: enabled = terminal
        case .always: enabled = true
        }
        redraw = terminal
    }

    /// `count` more items are done.
    func advance(by count: Int) {
        done += count
        draw(final: false)
    }

    /// The bar's last state, then a line break (redrawn bars only).
    func finish() {
        guard enabled else { return }
        draw(final: true)
        if redraw, drewOnce { Output.writeStderr("\n") }
    }

    var elapsed: Double { Date().timeIntervalSince(start) }

    func text() -> String {
        let seconds = max(elapsed, 0.001)
        let rate = Double(done - base) / seconds
        var parts = [label]
        if let total, total > 0 {
            let fraction = min(Double(done) / Double(total), 1)
            let width = 24
            let filled = Int((fraction * Double(width)).rounded(.down))
            parts.append(
                "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "]")
            parts.append("\(done)/\(total)")
            parts.append(String(format: "%3.0f%%", fraction * 100))
        } else {
            parts.append("\(done)")
        }
        parts.append(String(format: "%.0f/s", rate))
        if let total, rate > 0, done < total {
            parts.append("ETA " + Format.duration(Double(total - done) / rate))
        } else if done > base {
            parts.append("in " + Format.duration(seconds))
        }
        return parts.joined(separator: " ")
    }

    private func draw(final: Bool) {
        guard enabled else { return }
        let now = Date()
        if redraw {
            // At most ten redraws a second; the last one always.
            guard final || now.timeIntervalSince(lastDraw) >= 0.1 else { return }
            Output.writeStderr("\r\u{1B}[K" + text())
        } else {
            // A line per update; the closing call repeats nothing.
            if final, drewOnce { return }
            Output.writeStderr(text() + "\n")
        }
        lastDraw = now
        drewOnce = true
    }
}
