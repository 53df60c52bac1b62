import Foundation

/// A type written to JSON bytes by hand instead of through Foundation's `JSONEncoder`.
///
/// Only what the hot paths write conforms: the user record and the internal answers and requests
/// that carry it, the Firebase lookup answer, the JWS header and the ID token's claims. Foundation's
/// encoder goes through `Codable`'s keyed containers and a generic value tree; under
/// `accounts:lookup` the directory's encoder and the token service's decoder of the same user were
/// about a tenth of all CPU samples (docs/benchmarks.md). The output is what `JSONEncoder` with
/// `.withoutEscapingSlashes` writes for the same value, key order aside: optionals that are nil are
/// left out, `/` and non-ASCII text are written as they are.
public protocol DirectJSONEncodable: Encodable {
    /// Appends this value as one JSON value.
    func writeJSON(to writer: inout JSONWriter)
}

/// A type read from JSON bytes by hand instead of through Foundation's `JSONDecoder`: the answers
/// and requests of the hot internal calls. Unknown keys are skipped, as `JSONDecoder` skips them.
/// Member names are read as written: a request type that conforms loses `JSONBody`'s snake_case
/// leniency, so only internal requests (which the token service writes) conform, never a client's.
public protocol DirectJSONDecodable: Decodable {
    /// Reads one JSON value (the reader is positioned at it) and leaves the reader after it.
    init(json reader: inout JSONReader) throws
}

extension DirectJSONEncodable {
    /// The value's JSON bytes.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter()
        writeJSON(to: &writer)
        return writer.bytes
    }
}

extension DirectJSONDecodable {
    /// Decodes a whole document: one value, then nothing but whitespace.
    public init(jsonBytes bytes: some Collection<UInt8>) throws {
        func read(_ buffer: UnsafeBufferPointer<UInt8>) throws -> Self {
            var reader = JSONReader(buffer)
            let value = try Self(json: &reader)
            try reader.expectEnd()
            return value
        }
        if let value = try bytes.withContiguousStorageIfAvailable(read) {
            self = value
        } else {
            self = try Array(bytes).withUnsafeBufferPointer(read)
        }
    }
}

// MARK: - Writing

/// Appends JSON to a byte array. Object members are written inside `object(_:)`, which places the
/// commas; a nil optional member is left out.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    /// Inside an object: a member has been written, so the next one needs a comma.
    private var memberWritten = false

    public init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    /// One object: `body` writes its members (`member(_:_:)`).
    public mutating func object(_ body: (inout JSONWriter) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        let outer = memberWritten
        memberWritten = false
        body(&self)
        memberWritten = outer
        bytes.append(UInt8(ascii: "}"))
    }

    /// One array of values, each written by `element`.
    public mutating func array<Element>(_ elements: [Element], _ element: (Element, inout JSONWriter) -> Void) {
        bytes.append(UInt8(ascii: "["))
        for (index, value) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            element(value, &self)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func string(_ value: String) {
        JSONWriter.appendString(value, to: &bytes)
    }

    public mutating func bool(_ value: Bool) {
        bytes.append(contentsOf: value ? Self.trueBytes : Self.falseBytes)
    }

    /// A finite number in Swift's shortest round-trip form (`0.1`, `1e+21`, `100.0`: all JSON). A
    /// JSON document cannot carry infinity or NaN; they are written as `null`.
    public mutating func double(_ value: Double) {
        guard value.isFinite else {
            bytes.append(contentsOf: Self.nullBytes)
            return
        }
        bytes.append(contentsOf: value.description.utf8)
    }

    public mutating func null() {
        bytes.append(contentsOf: Self.nullBytes)
    }

    public mutating func int(_ value: Int64) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // Digits from the right into a small stack buffer; Int64.min's magnitude fits a UInt64.
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var first = 20
            while magnitude > 0 {
                first -= 1
                digits[first] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[first...]))
        }
    }

    // MARK: Object members

    /// The comma before every member but the first.
    private mutating func separateMember() {
        if memberWritten { bytes.append(UInt8(ascii: ",")) }
        memberWritten = true
    }

    /// A member name written in the source (plain ASCII, nothing to escape).
    private mutating func key(_ name: StaticString) {
        separateMember()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// A member whose name is not known in advance (escaped like any string), its value written by
    /// `body`.
    public mutating func member(named name: String, _ body: (inout JSONWriter) -> Void) {
        separateMember()
        string(name)
        bytes.append(UInt8(ascii: ":"))
        body(&self)
    }

    public mutating func member(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    public mutating func member(_ name: StaticString, _ value: Bool?) {
        guard let value else { return }
        key(name)
        bool(value)
    }

    public mutating func member(_ name: StaticString, _ value: Int64?) {
        guard let value else { return }
        key(name)
        int(value)
    }

    public mutating func member(_ name: StaticString, _ value: (some DirectJSONEncodable)?) {
        guard let value else { return }
        key(name)
        value.writeJSON(to: &self)
    }

    public mutating func member(_ name: StaticString, _ values: [some DirectJSONEncodable]?) {
        guard let values else { return }
        key(name)
        array(values) { value, writer in value.writeJSON(to: &writer) }
    }

    // MARK: Strings

    /// A JSON string: `"` and `\` escaped, control characters escaped (`\n`, `\r`, `\t`,
    /// `\u00XX`), everything else, `/` and non-ASCII included, as it is. The log lines use it too.
    public static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0x0A:
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "n"))
            case 0x0D:
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "r"))
            case 0x09:
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "t"))
            case 0x00..<0x20:
                out.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)],
                ])
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    private static let trueBytes: [UInt8] = Array("true".utf8)
    private static let falseBytes: [UInt8] = Array("false".utf8)
    private static let nullBytes: [UInt8] = Array("null".utf8)
}

// MARK: - Reading

/// The reason a hand-written decoder refused its input (the byte offset where it stopped).
public struct JSONReadError: Error, CustomStringConvertible {
    public var offset: Int
    public var reason: String
    public var description: String { "JSON: \(reason) at byte \(offset)" }
}

/// Reads JSON from a byte buffer, one value at a time, strictly (RFC 8259): no trailing commas,
/// no comments, no leading zeros, no unescaped control characters, no lone surrogates.
public struct JSONReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    public private(set) var offset = 0

    /// The buffer must outlive the reader.
    public init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    private func fail(_ reason: String) -> JSONReadError {
        JSONReadError(offset: offset, reason: reason)
    }

    private mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }

    private mutating func peek() throws -> UInt8 {
        skipWhitespace()
        guard offset < bytes.count else { throw fail("unexpected end") }
        return bytes[offset]
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard try peek() == byte else { throw fail("expected '\(Character(Unicode.Scalar(byte)))'") }
        offset += 1
    }

    private mutating func literal(_ text: StaticString) throws {
        let count = text.utf8CodeUnitCount
        guard offset + count <= bytes.count,
            UnsafeBufferPointer(start: text.utf8Start, count: count).elementsEqual(bytes[offset..<offset + count])
        else { throw fail("invalid literal") }
        offset += count
    }

    /// Nothing but whitespace is left.
    public mutating func expectEnd() throws {
        skipWhitespace()
        guard offset == bytes.count else { throw fail("trailing data") }
    }

    /// The members of an object: `member` is called with each key, positioned at its value, and
    /// must read or skip that value.
    public mutating func object(_ member: (String, inout JSONReader) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        if try peek() == UInt8(ascii: "}") {
            offset += 1
            return
        }
        while true {
            guard try peek() == UInt8(ascii: "\"") else { throw fail("expected a key") }
            let key = try string()
            try expect(UInt8(ascii: ":"))
            try member(key, &self)
            switch try peek() {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"):
                offset += 1
                return
            default: throw fail("expected ',' or '}'")
            }
        }
    }

    /// The elements of an array, each read by `element`.
    public mutating func array<Element>(_ element: (inout JSONReader) throws -> Element) throws -> [Element] {
        try expect(UInt8(ascii: "["))
        var elements: [Element] = []
        if try peek() == UInt8(ascii: "]") {
            offset += 1
            return elements
        }
        while true {
            elements.append(try element(&self))
            switch try peek() {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"):
                offset += 1
                return elements
            default: throw fail("expected ',' or ']'")
            }
        }
    }

    /// `null` is consumed and answers true; anything else is left in place and answers false.
    public mutating func null() throws -> Bool {
        guard try peek() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    public mutating func bool() throws -> Bool {
        switch try peek() {
        case UInt8(ascii: "t"):
            try literal("true")
            return true
        case UInt8(ascii: "f"):
            try literal("false")
            return false
        default: throw fail("expected a boolean")
        }
    }

    /// An integer that fits an Int64, written without fraction or exponent (what the encoders
    /// write for integer fields).
    public mutating func int() throws -> Int64 {
        _ = try peek()
        let start = offset
        var negative = false
        if bytes[offset] == UInt8(ascii: "-") {
            negative = true
            offset += 1
        }
        guard offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) else {
            throw fail("expected an integer")
        }
        if bytes[offset] == UInt8(ascii: "0"), offset + 1 < bytes.count,
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset + 1])
        {
            throw fail("leading zero")
        }
        var magnitude: UInt64 = 0
        while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[offset] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { throw fail("integer out of range") }
            magnitude = sum
            offset += 1
        }
        if offset < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[offset]) {
            offset = start
            throw fail("expected an integer")
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { throw fail("integer out of range") }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw fail("integer out of range") }
        return Int64(magnitude)
    }

    public mutating func string() throws -> String {
        try expect(UInt8(ascii: "\""))
        let start = offset
        // Fast path: no escapes, the bytes are the string.
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                guard let text = String(validating: bytes[start..<offset], as: UTF8.self) else {
                    throw fail("invalid UTF-8")
                }
                offset += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw fail("control character in a string") }
            offset += 1
        }
        var decoded = Array(bytes[start..<offset])
        while offset < bytes.count {
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                guard let text = String(validating: decoded, as: UTF8.self) else { throw fail("invalid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                offset += 1
                guard offset < bytes.count else { throw fail("unexpected end") }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = UInt32(try hex4())
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"),
                            bytes[offset + 1] == UInt8(ascii: "u")
                        else { throw fail("lone surrogate") }
                        offset += 2
                        let low = UInt32(try hex4())
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("lone surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw fail("lone surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid escape") }
                    decoded.append(contentsOf: UTF8.encode(unicode)!)
                default:
                    throw fail("invalid escape")
                }
            default:
                guard byte >= 0x20 else { throw fail("control character in a string") }
                decoded.append(byte)
                offset += 1
            }
        }
        throw fail("unterminated string")
    }

    private mutating func hex4() throws -> UInt16 {
        guard offset + 4 <= bytes.count else { throw fail("unexpected end") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | UInt16(digit)
            offset += 1
        }
        return value
    }

    /// Values nested deeper than this are refused while skipping, before the recursion could exhaust
    /// the stack: a JWS header is read before its signature is checked, so anyone can send one.
    public static let maximumSkippedDepth = 64

    /// Reads past one value of any kind (an unknown member).
    public mutating func skipValue() throws {
        try skipValue(depth: 1)
    }

    private mutating func skipValue(depth: Int) throws {
        guard depth <= Self.maximumSkippedDepth else { throw fail("nested too deeply") }
        switch try peek() {
        case UInt8(ascii: "{"): try object { _, reader in try reader.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["): _ = try array { reader in try reader.skipValue(depth: depth + 1) }
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
        case UInt8(ascii: "n"): try literal("null")
        default: try number()
        }
    }

    /// Any JSON number (RFC 8259's grammar), read past.
    private mutating func number() throws {
        func digits() -> Int {
            let start = offset
            while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) {
                offset += 1
            }
            return offset - start
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        let first = offset
        let integerDigits = digits()
        guard integerDigits > 0 else { throw fail("invalid value") }
        if integerDigits > 1, bytes[first] == UInt8(ascii: "0") { throw fail("leading zero") }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            guard digits() > 0 else { throw fail("invalid number") }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
                offset += 1
            }
            guard digits() > 0 else { throw fail("invalid number") }
        }
    }

    // Optional members: `null` reads as nil, as `JSONDecoder` reads it for an optional.

    public mutating func optionalString() throws -> String? { try null() ? nil : try string() }
    public mutating func optionalBool() throws -> Bool? { try null() ? nil : try bool() }
    public mutating func optionalInt() throws -> Int64? { try null() ? nil : try int() }
}

/// A required member's value, or the error saying it was absent.
public func requiredJSONMember<Value>(_ value: Value?, _ name: String) throws -> Value {
    guard let value else { throw JSONReadError(offset: 0, reason: "missing member '\(name)'") }
    return value
}
