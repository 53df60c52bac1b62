import Foundation
import TesseraShared

/// Reading the admin API's answers: `JSONValue` (TesseraShared) with the accessors a client needs.
extension JSONValue {
    /// A string, or a number sent as a string (`"createdAt":"1795696231741"`), as an integer.
    var int64: Int64? {
        if let intValue { return intValue }
        if case .string(let text) = self { return Int64(text) }
        return nil
    }

    /// The value as a table cell: strings as they are, numbers and booleans written out, absent "".
    var cellText: String {
        switch self {
        case .null: ""
        case .bool(let value): value ? "yes" : "no"
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .string(let value): value
        case .array(let values): values.map(\.cellText).joined(separator: ",")
        case .object: (try? JSON.compact(self)) ?? ""
        }
    }

    /// A copy without the named members (an object; anything else as it is).
    func removing(_ keys: Set<String>) -> JSONValue {
        guard case .object(let members) = self else { return self }
        return .object(members.filter { !keys.contains($0.key) })
    }

    /// A copy with `key` set (an object; anything else as it is).
    func setting(_ key: String, _ value: JSONValue?) -> JSONValue {
        guard case .object(var members) = self else { return self }
        members[key] = value
        return .object(members)
    }
}

enum JSON {
    /// Pretty, keys sorted: what `--json` prints (the same answer always prints the same way).
    static func pretty(_ value: JSONValue) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// One line, keys sorted.
    static func compact(_ value: JSONValue) throws -> String {
        String(decoding: try compactData(value), as: UTF8.self)
    }

    static func compactData(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    static func decode(_ data: Data) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: data)
    }

    /// `{"a": 1}` from `["a": .int(1)]`, nil members dropped.
    static func object(_ members: [String: JSONValue?]) -> JSONValue {
        .object(members.compactMapValues { $0 })
    }
}

extension Optional where Wrapped == String {
    var json: JSONValue? { map(JSONValue.string) }
}

extension Optional where Wrapped == Bool {
    var json: JSONValue? { map(JSONValue.bool) }
}

extension Optional where Wrapped == Int {
    var json: JSONValue? { map { JSONValue.int(Int64($0)) } }
}
