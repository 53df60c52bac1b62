import Crypto
import Foundation
import TesseraShared

/// Time-based one-time passwords as the Firebase SDKs' TOTP second factor expects them: RFC 6238
/// over RFC 4226's HOTP, HMAC-SHA-1, 6 digits, a 30-second step, the shared secret given to the app
/// in base32 (`totpSessionInfo.sharedSecretKey`, which `TotpSecret.generateQrCodeUrl` puts into an
/// `otpauth://` URL). The SDKs read the algorithm, length and period from the enrolment's answer,
/// so these are the values the answer names.
struct Totp: Sendable {
    static let digits = 6
    static let period: Int64 = 30
    static let algorithm = "SHA1"
    /// 160 bits, the HMAC-SHA-1 block RFC 4226 §4 recommends (R6).
    static let secretLength = 20

    let secret: [UInt8]

    init(secret: [UInt8]) {
        self.secret = secret
    }

    /// A new random shared secret.
    static func generate() -> Totp { Totp(secret: Secrets.randomBytes(secretLength)) }

    /// The secret as the app receives it: base32 without padding.
    var sharedSecretKey: String { Base32.encode(secret) }

    /// The time step of `date` (seconds since 1970 ÷ the period).
    static func step(at date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / Double(period)).rounded(.down))
    }

    /// The code of time step `step`, `digits` long (RFC 4226 §5.3: dynamic truncation).
    func code(step: Int64, digits: Int = Totp.digits) -> String {
        var counter = UInt64(bitPattern: step).bigEndian
        let message = withUnsafeBytes(of: &counter) { Data($0) }
        let mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: secret)))
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let binary =
            UInt32(mac[offset] & 0x7f) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
            | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: digits - value.count) + value
    }

    /// The time step whose code `code` is, among the step of `date` and `adjacentIntervals` steps on
    /// each side (the clock drift Identity Platform's `totpProviderConfig.adjacentIntervals` allows),
    /// or nil. Every candidate is compared, in constant time, whatever matched first. A step at or
    /// before `usedThrough` (the last step a code of this factor was accepted for) never matches: a
    /// code is accepted once.
    func matchingStep(of code: String, at date: Date, adjacentIntervals: Int, usedThrough: Int64? = nil) -> Int64? {
        guard code.utf8.count == Self.digits, code.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        let now = Self.step(at: date)
        let window = max(0, adjacentIntervals)
        var matched: Int64?
        for step in (now - Int64(window))...(now + Int64(window)) {
            let equal = Secrets.constantTimeEquals(self.code(step: step), code)
            if equal, step > (usedThrough ?? .min), matched == nil { matched = step }
        }
        return matched
    }
}

/// Base32 (RFC 4648 §6), the encoding of TOTP shared secrets.
enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Upper case, without padding (what authenticator apps read from an `otpauth://` URL).
    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[Int(buffer >> UInt32(bits - 5) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[Int(buffer << UInt32(5 - bits) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of `text` (either case, padding optional), or nil when it is not base32 or its
    /// unused trailing bits are not zero.
    static func decode(_ text: String) -> [UInt8]? {
        var symbols = Array(text.utf8)
        while symbols.last == UInt8(ascii: "=") { symbols.removeLast() }
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for symbol in symbols {
            let value: UInt8
            switch symbol {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = symbol - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = symbol - UInt8(ascii: "a")
            case UInt8(ascii: "2")...UInt8(ascii: "7"): value = symbol - UInt8(ascii: "2") + 26
            default: return nil
            }
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8)))
                bits -= 8
            }
            buffer &= (1 << UInt32(bits)) - 1
        }
        guard bits < 5, buffer == 0 else { return nil }
        return output
    }
}
