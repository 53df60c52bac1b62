import Foundation
import Logging
import Synchronization

public enum LogSetup {
    /// Bootstraps logging once, in `main`: one line per event on stderr, level from the flag or
    /// `LOG_LEVEL`, format from `LOG_FORMAT` — `json` (the default: one JSON object per line, for log
    /// collectors) or `text`.
    public static func bootstrap(level: String?) {
        let environment = ProcessInfo.processInfo.environment
        let name = level ?? environment["LOG_LEVEL"] ?? "info"
        let parsed = Logger.Level(rawValue: name.lowercased()) ?? .info
        let json = (environment["LOG_FORMAT"] ?? "json").lowercased() != "text"
        LoggingSystem.bootstrap { label in
            if json {
                var handler = JSONLogHandler(label: label)
                handler.logLevel = parsed
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = parsed
            return handler
        }
    }
}

/// One JSON object per line on stderr: `time` (RFC 3339, ms), `level`, `service` (the logger's
/// label), `message`, and every metadata key (`request.id` among them) as a top-level field.
public struct JSONLogHandler: LogHandler {
    public let label: String
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    /// Lines from concurrent tasks never interleave.
    static let output = Mutex<Void>(())

    public init(label: String) {
        self.label = label
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [String: Any] = [:]
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        for (key, value) in merged { fields[key] = Self.plain(value) }
        if let error = event.error { fields["error"] = String(describing: error) }
        fields["time"] = RFC3339.millis(fromEpochMillis: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
        fields["level"] = event.level.rawValue
        fields["service"] = label
        fields["message"] = event.message.description
        fields["source"] = event.source
        guard
            var line = try? JSONSerialization.data(
                withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        line.append(0x0A)
        Self.output.withLock { _ in FileHandle.standardError.write(line) }
    }

    static func plain(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(plain)
        case .dictionary(let values): values.mapValues(plain)
        }
    }
}
