import Foundation

/// Settings a scope keeps as JSON text in a column of `tenants` (`rate_limits`, `mfa_config`,
/// `phone_config`): NULL, or text that does not decode, is the defaults, and the defaults are stored
/// as NULL, so that an untouched scope keeps an empty column.
protocol StoredSettings: Codable, Equatable {
    static var defaults: Self { get }
}

extension StoredSettings {
    /// The stored JSON (nil or unreadable: the defaults).
    static func decode(_ text: String?) -> Self {
        guard let text, let data = text.data(using: .utf8), let value = try? JSONDecoder().decode(Self.self, from: data)
        else { return defaults }
        return value
    }

    /// The column's value: nil for the defaults.
    var encoded: String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard self != Self.defaults, let data = try? encoder.encode(self) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
