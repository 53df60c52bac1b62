import Crypto
import Foundation

public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Unpadded base64url (RFC 4648 §5). On the hot path of every token: no Foundation string work.
    public static func encode<D: DataProtocol>(_ data: D) -> String {
        let bytes = Array(data)
        let count = bytes.count / 3 * 4 + [0, 2, 3][bytes.count % 3]
        return String(unsafeUninitializedCapacity: count) { output in
            var out = 0
            var index = 0
            while index + 3 <= bytes.count {
                let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                output[out] = alphabet[Int(value >> 18 & 63)]
                output[out + 1] = alphabet[Int(value >> 12 & 63)]
                output[out + 2] = alphabet[Int(value >> 6 & 63)]
                output[out + 3] = alphabet[Int(value & 63)]
                out += 4
                index += 3
            }
            switch bytes.count - index {
            case 1:
                let value = UInt32(bytes[index]) << 16
                output[out] = alphabet[Int(value >> 18 & 63)]
                output[out + 1] = alphabet[Int(value >> 12 & 63)]
                out += 2
            case 2:
                let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
                output[out] = alphabet[Int(value >> 18 & 63)]
                output[out + 1] = alphabet[Int(value >> 12 & 63)]
                output[out + 2] = alphabet[Int(value >> 6 & 63)]
                out += 3
            default:
                break
            }
            return out
        }
    }

    /// The 6-bit value of a base64url or standard base64 character; 0xFF for anything else.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    /// Decodes base64url (and, leniently, standard base64), with or without padding. Nil for any
    /// other character, misplaced padding or an impossible length.
    public static func decode(_ text: some StringProtocol) -> Data? {
        decode(utf8: text.utf8)
    }

    /// The same, from UTF-8 bytes.
    public static func decode(utf8: some Sequence<UInt8>) -> Data? {
        var characters = Array(utf8)
        var padding = 0
        while let last = characters.last, last == UInt8(ascii: "=") {
            characters.removeLast()
            padding += 1
        }
        if padding > 2 || (padding > 0 && (characters.count + padding) % 4 != 0) { return nil }
        if characters.count % 4 == 1 { return nil }
        var output = [UInt8]()
        output.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in characters {
            let value = values[Int(character)]
            if value == 0xFF { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return Data(output)
    }
}

public enum Secrets {
    /// `count` bytes from the system CSPRNG, eight per draw (each draw of a
    /// `SystemRandomNumberGenerator` is a `getrandom` system call; it was one per byte).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8]()
        bytes.reserveCapacity(count + 7)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        bytes.removeLast(bytes.count - count)
        return bytes
    }

    private static let alphanumerics = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// A random identifier of `length` characters from [A-Za-z0-9] (Firebase-style local ids are 28),
    /// uniform: bytes from 248 up are drawn again (248 = 4 × 62).
    public static func randomAlphanumeric(_ length: Int) -> String {
        var result = [UInt8]()
        result.reserveCapacity(length)
        while result.count < length {
            for byte in randomBytes(length - result.count + 8) where byte < 248 && result.count < length {
                result.append(alphanumerics[Int(byte) % 62])
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// Compares two secrets in time that depends only on their lengths, not on where they differ.
    public static func constantTimeEquals(_ lhs: some StringProtocol, _ rhs: some StringProtocol) -> Bool {
        let a = Array(lhs.utf8)
        let b = Array(rhs.utf8)
        // Hash both sides so that the comparison length never depends on the secret's length.
        let ha = Array(SHA256.hash(data: a))
        let hb = Array(SHA256.hash(data: b))
        var difference: UInt8 = 0
        for index in 0..<ha.count { difference |= ha[index] ^ hb[index] }
        return difference == 0
    }

    /// Constant-time comparison of two byte strings of equal length (false for unequal lengths).
    public static func constantTimeEquals(_ lhs: Data, _ rhs: Data) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(lhs, rhs) { difference |= a ^ b }
        return difference == 0
    }

    /// SHA-256 of a high-entropy token (refresh tokens): what the database stores instead of the token.
    public static func tokenHash(_ token: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(token.utf8))))
    }
}
