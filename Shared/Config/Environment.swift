import Foundation

/// Reads configuration from environment variables. Values are used verbatim; a malformed value is a
/// startup error that names the key (never its value, which may be a secret).
public struct ConfigReader: Sendable {
    public let values: [String: String]

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    public func string(_ key: String) -> String? {
        guard let value = values[key], !value.isEmpty else { return nil }
        return value
    }

    public func string(_ key: String, default defaultValue: String) -> String {
        string(key) ?? defaultValue
    }

    public func required(_ key: String) throws -> String {
        guard let value = string(key) else { throw ConfigError.missing(key) }
        return value
    }

    public func int(_ key: String, default defaultValue: Int) throws -> Int {
        guard let raw = string(key) else { return defaultValue }
        guard let value = Int(raw) else { throw ConfigError.invalid(key, "expected an integer") }
        return value
    }

    /// A finite decimal number.
    public func double(_ key: String, default defaultValue: Double) throws -> Double {
        guard let raw = string(key) else { return defaultValue }
        guard let value = Double(raw), value.isFinite else { throw ConfigError.invalid(key, "expected a number") }
        return value
    }

    public func bool(_ key: String, default defaultValue: Bool) throws -> Bool {
        guard let raw = string(key)?.lowercased() else { return defaultValue }
        switch raw {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigError.invalid(key, "expected true or false")
        }
    }

    public func duration(_ key: String, default defaultValue: Duration) throws -> Duration {
        guard let raw = string(key) else { return defaultValue }
        guard let value = Duration.parse(raw) else {
            throw ConfigError.invalid(key, "expected a duration such as 500ms, 10s, 5m, 1h or 30d")
        }
        return value
    }
}

extension ConfigReader {
    /// How long graceful shutdown may take before what is left is cancelled
    /// (`TESSERA_SHUTDOWN_TIMEOUT`, default 25s: inside Kubernetes' default 30 s grace period).
    public func shutdownTimeout() throws -> Duration {
        try duration("TESSERA_SHUTDOWN_TIMEOUT", default: .seconds(25))
    }
}

public enum ConfigError: Error, CustomStringConvertible {
    case missing(String)
    case invalid(String, String)

    public var description: String {
        switch self {
        case .missing(let key): "configuration key \(key) is required"
        case .invalid(let key, let why): "configuration key \(key) is invalid: \(why)"
        }
    }
}

extension Duration {
    /// Parses `<number><unit>` with unit ms, s, m, h or d (`10s`, `5m`, `30d`, `1.5h`).
    public static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        for (suffix, scale) in units where trimmed.hasSuffix(suffix) {
            let number = trimmed.dropLast(suffix.count)
            // "5ms" must not be read as "5m" + "s": the longest suffix is tried first.
            if suffix == "s", number.hasSuffix("m") { continue }
            guard let value = Double(number), value >= 0, value.isFinite else { return nil }
            return .milliseconds(Int64((value * scale * 1000).rounded()))
        }
        return nil
    }

    /// Whole seconds (rounded down).
    public var wholeSeconds: Int64 { components.seconds }

    public var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
