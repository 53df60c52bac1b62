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
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { _, new in new } }
        if let own = event.metadata { fields.merge(own) { _, new in new } }
        if let error = event.error { fields["error"] = .string(String(describing: error)) }
        fields["time"] = .string(RFC3339.millis(fromEpochMillis: RFC3339.nowMillis()))
        fields["level"] = .string(event.level.rawValue)
        fields["service"] = .string(label)
        fields["message"] = .string(event.message.description)
        fields["source"] = .string(event.source)
        var line: [UInt8] = []
        line.reserveCapacity(256)
        JSONLine.append(.dictionary(fields), to: &line)
        line.append(0x0A)
        Self.output.withLock { _ in JSONLine.write(line, to: STDERR_FILENO) }
    }
}

/// The JSON of one log line, written by hand: Foundation's `JSONSerialization` with sorted keys
/// compared every key through ICU and formatted the time through a date style, which made the one
/// info line of an anonymous sign-up about a tenth of the directory's CPU for that request.
/// Object keys are sorted (Unicode scalar order); strings are escaped by `JSONWriter.appendString`.
enum JSONLine {
    static func append(_ value: Logger.Metadata.Value, to out: inout [UInt8]) {
        switch value {
        case .string(let text):
            JSONWriter.appendString(text, to: &out)
        case .stringConvertible(let convertible):
            JSONWriter.appendString(convertible.description, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                append(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let values):
            out.append(UInt8(ascii: "{"))
            for (index, field) in values.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(field.key, to: &out)
                out.append(UInt8(ascii: ":"))
                append(field.value, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Writes all of `bytes`, retrying short writes and interrupted calls; gives up on other errors
    /// (a log line is not worth failing a request for).
    static func write(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
