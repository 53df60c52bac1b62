import Foundation
import Logging

public enum LogSetup {
    /// Bootstraps logging once, in `main`: one line per event on stderr, level from the flag or
    /// `LOG_LEVEL`.
    public static func bootstrap(level: String?) {
        let name = level ?? ProcessInfo.processInfo.environment["LOG_LEVEL"] ?? "info"
        let parsed = Logger.Level(rawValue: name.lowercased()) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = parsed
            return handler
        }
    }
}
