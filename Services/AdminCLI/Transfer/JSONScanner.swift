import Foundation
import TesseraShared

/// Finds the members of a large JSON document and the elements of its arrays without building the
/// whole tree: an export of a million users is read as byte ranges, and only a batch of them is
/// decoded at a time. It checks only what it needs to find the ranges; each range it hands out is
/// decoded (and so fully checked) by JSONDecoder.
struct JSONScanner {
    struct Failure: Error, CustomStringConvertible {
        var offset: Int
        var why: String
        var description: String { "not valid JSON at byte \(offset): \(why)" }
    }

    private let bytes: UnsafeRawBufferPointer
    private var index: Int

    private init(_ bytes: UnsafeRawBufferPointer, at index: Int) {
        self.bytes = bytes
        self.index = index
    }

    /// The members of the top-level object: name and the byte range of the value.
    static func members(of data: Data) throws -> [(name: String, range: Range<Int>)] {
        try data.withUnsafeBytes { raw in
            var scanner = JSONScanner(raw, at: 0)
            var result: [(String, Range<Int>)] = []
            scanner.skipWhitespace()
            try scanner.expect(UInt8(ascii: "{"))
            scanner.skipWhitespace()
            if scanner.peek == UInt8(ascii: "}") { return [] }
            while true {
                scanner.skipWhitespace()
                let keyRange = try scanner.string()
                let name = try JSONDecoder().decode(String.self, from: Data(raw[keyRange]))
                scanner.skipWhitespace()
                try scanner.expect(UInt8(ascii: ":"))
                let value = try scanner.value()
                result.append((name, value))
                scanner.skipWhitespace()
                if scanner.peek == UInt8(ascii: ",") {
                    scanner.index += 1
                    continue
                }
                try scanner.expect(UInt8(ascii: "}"))
                return result
            }
        }
    }

    /// The byte ranges of the elements of the array at `range`.
    static func elements(of data: Data, in range: Range<Int>) throws -> [Range<Int>] {
        try data.withUnsafeBytes { raw in
            var scanner = JSONScanner(UnsafeRawBufferPointer(rebasing: raw[..<range.upperBound]), at: range.lowerBound)
            var result: [Range<Int>] = []
            scanner.skipWhitespace()
            try scanner.expect(UInt8(ascii: "["))
            scanner.skipWhitespace()
            if scanner.peek == UInt8(ascii: "]") { return [] }
            while true {
                result.append(try scanner.value())
                scanner.skipWhitespace()
                if scanner.peek == UInt8(ascii: ",") {
                    scanner.index += 1
                    continue
                }
                try scanner.expect(UInt8(ascii: "]"))
                return result
            }
        }
    }

    static func decode(_ data: Data, _ range: Range<Int>) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: data.subdata(in: range))
    }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard peek == byte else {
            throw Failure(offset: index, why: "expected \"\(Character(Unicode.Scalar(byte)))\"")
        }
        index += 1
    }

    /// A string starting here; its range, quotes included.
    private mutating func string() throws -> Range<Int> {
        let start = index
        try expect(UInt8(ascii: "\""))
        while let byte = peek {
            if byte == UInt8(ascii: "\\") {
                index += 2
            } else {
                index += 1
                if byte == UInt8(ascii: "\"") { return start..<index }
            }
        }
        throw Failure(offset: start, why: "a string that does not end")
    }

    /// Any value starting here (after whitespace); its range.
    private mutating func value() throws -> Range<Int> {
        skipWhitespace()
        let start = index
        guard let first = peek else { throw Failure(offset: index, why: "the document ends early") }
        switch first {
        case UInt8(ascii: "\""):
            return try string()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while let byte = peek {
                switch byte {
                case UInt8(ascii: "\""):
                    _ = try string()
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                default:
                    break
                }
                index += 1
                if depth == 0 { return start..<index }
            }
            throw Failure(offset: start, why: "an object or array that does not end")
        default:
            // A number or a literal: up to the next delimiter.
            while let byte = peek,
                !(byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]")
                    || byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09)
            {
                index += 1
            }
            guard index > start else { throw Failure(offset: start, why: "a value was expected") }
            return start..<index
        }
    }
}
