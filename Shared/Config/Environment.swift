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
    /// A secret setting (docs/protocol/admin.md#the-admin-plane): `NAME`, or the contents of the file
    /// `NAME_FILE` names (a Docker or Kubernetes secret; one trailing line break is dropped), never both;
    /// refused when empty, a placeholder, or weaker than 256 bits by its length and alphabet. The message
    /// names the setting, never the value.
    public func secret(_ key: String) throws -> String {
        guard let value = try secretText(key) else { throw ConfigError.missing(key) }
        if let problem = SecretStrength.problem(value) { throw ConfigError.invalid(key, problem) }
        return value
    }

    /// An optional secret setting as it is set: `NAME`, or the contents of the file `NAME_FILE` names
    /// (one trailing line break dropped), never both; nil when neither is set.
    public func secretText(_ key: String) throws -> String? {
        switch (string(key), string(key + "_FILE")) {
        case (.some, .some):
            throw ConfigError.invalid(key, "set either \(key) or \(key)_FILE, not both")
        case (let direct?, nil):
            return direct
        case (nil, let path?):
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
            else { throw ConfigError.invalid(key + "_FILE", "the file cannot be read") }
            return text.hasSuffix("\r\n")
                ? String(text.dropLast(2)) : text.hasSuffix("\n") ? String(text.dropLast()) : text
        case (nil, nil):
            return nil
        }
    }

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

/// What makes a configured secret unfit: empty, a well-known placeholder, or guessable by its size.
public enum SecretStrength {
    /// Words that stand in for a secret in templates and tutorials (compared case-insensitively).
    static let placeholders: Set<String> = [
        "owner", "change-me", "changeme", "change_me", "secret", "password", "admin", "test", "example", "default",
        "placeholder", "replace-me", "todo",
    ]

    /// Bits of a random string of this length over the smallest alphabet its characters fit in.
    public static func estimatedBits(_ value: String) -> Double {
        let scalars = value.unicodeScalars
        guard !scalars.isEmpty else { return 0 }
        let hex = scalars.allSatisfy {
            ("0"..."9").contains($0) || ("a"..."f").contains($0) || ("A"..."F").contains($0)
        }
        var alphabet = 0
        if hex {
            alphabet = 16
        } else {
            if scalars.contains(where: { ("a"..."z").contains($0) }) { alphabet += 26 }
            if scalars.contains(where: { ("A"..."Z").contains($0) }) { alphabet += 26 }
            if scalars.contains(where: { ("0"..."9").contains($0) }) { alphabet += 10 }
            if scalars.contains(where: {
                !("a"..."z").contains($0) && !("A"..."Z").contains($0) && !("0"..."9").contains($0)
            }) {
                alphabet += 32
            }
        }
        // A value made of one repeated character carries no more than one character's worth.
        let distinct = Set(scalars).count
        let length = distinct == 1 ? 1 : scalars.count
        return Double(length) * log2(Double(max(alphabet, 2)))
    }

    /// Why `value` may not be a secret, or nil when it may.
    public static func problem(_ value: String) -> String? {
        if value.isEmpty { return "empty" }
        let lowered = value.lowercased()
        if placeholders.contains(lowered) || lowered.contains("change-me") || lowered.contains("changeme") {
            return "a placeholder, not a secret: generate one (e.g. `openssl rand -hex 32`)"
        }
        if estimatedBits(value) < 256 {
            return
                "too short to be a secret (under 256 bits, e.g. fewer than 64 hex digits): generate one with `openssl rand -hex 32`"
        }
        return nil
    }
}
