import Foundation
import Testing

@testable import UserDirectory

@Suite("TOTP second factor: codes, shared secrets and sealed storage")
struct TotpTests {
    /// RFC 4226 Appendix D's and RFC 6238 Appendix B's secret for HMAC-SHA-1.
    static let rfcSecret = Array("12345678901234567890".utf8)

    @Test("HOTP values of RFC 4226 Appendix D")
    func hotpVectors() {
        let totp = Totp(secret: Self.rfcSecret)
        let expected = [
            "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489",
        ]
        for (counter, code) in expected.enumerated() {
            #expect(totp.code(step: Int64(counter)) == code, "counter \(counter)")
        }
    }

    @Test("TOTP values of RFC 6238 Appendix B (SHA-1), 8 digits and the SDKs' 6")
    func totpVectors() {
        let totp = Totp(secret: Self.rfcSecret)
        let vectors: [(TimeInterval, String)] = [
            (59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"),
            (1_234_567_890, "89005924"), (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
        ]
        for (seconds, code) in vectors {
            let step = Totp.step(at: Date(timeIntervalSince1970: seconds))
            #expect(totp.code(step: step, digits: 8) == code, "T = \(seconds)")
            #expect(totp.code(step: step) == String(code.suffix(6)), "T = \(seconds)")
        }
    }

    @Test("a code matches its own step and the adjacent ones allowed, never a used one or a malformed one")
    func matching() {
        let totp = Totp.generate()
        let now = Date(timeIntervalSince1970: 1_800_000_015)
        let step = Totp.step(at: now)
        let current = totp.code(step: step)
        #expect(totp.matchingStep(of: current, at: now, adjacentIntervals: 0) == step)
        let previous = totp.code(step: step - 1)
        #expect(totp.matchingStep(of: previous, at: now, adjacentIntervals: 0) == nil)
        #expect(totp.matchingStep(of: previous, at: now, adjacentIntervals: 1) == step - 1)
        let next = totp.code(step: step + 1)
        #expect(totp.matchingStep(of: next, at: now, adjacentIntervals: 1) == step + 1)
        #expect(totp.matchingStep(of: totp.code(step: step - 2), at: now, adjacentIntervals: 1) == nil)
        // Accepted once: a step at or before the last one used is refused, a later one is not.
        #expect(totp.matchingStep(of: current, at: now, adjacentIntervals: 1, usedThrough: step) == nil)
        #expect(totp.matchingStep(of: next, at: now, adjacentIntervals: 1, usedThrough: step) == step + 1)
        for malformed in ["", "12345", "1234567", "12345a", " 23456", "１２３４５６"] {
            #expect(totp.matchingStep(of: malformed, at: now, adjacentIntervals: 10) == nil, "\(malformed)")
        }
        #expect(Totp.generate().secret != totp.secret)
        #expect(totp.secret.count == 20)
    }

    @Test("base32 as RFC 4648 §10 spells it, without padding, and its decoding")
    func base32() {
        let vectors = [
            ("", ""), ("f", "MY"), ("fo", "MZXQ"), ("foo", "MZXW6"), ("foob", "MZXW6YQ"), ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base32.encode(Array(plain.utf8)) == encoded)
            #expect(Base32.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base32.decode("MZXW6YTBOI======") == Array("foobar".utf8))
        #expect(Base32.decode("mzxw6ytboi") == Array("foobar".utf8))
        #expect(Base32.decode("MZXW6YTBO1") == nil)
        #expect(Base32.decode("MZ") == nil, "non-zero trailing bits")
        let totp = Totp.generate()
        #expect(totp.sharedSecretKey.count == 32)
        #expect(Base32.decode(totp.sharedSecretKey) == totp.secret)
    }

    @Test("a sealed secret opens only with its key and its row, and keys can be rotated")
    func sealing() throws {
        let old = (0..<32).map { UInt8($0) }
        let new = (0..<32).map { UInt8(255 - $0) }
        let sealer = try #require(SecretSealer(keys: [old]))
        let secret = Totp.generate().secret
        let sealed = try sealer.seal(secret, context: "tenant-a/user-1/enrolment-1")
        #expect(sealed.hasPrefix("v1.\(SecretSealer.keyID(old))."))
        #expect(!sealed.contains(Base32.encode(secret)))
        #expect(sealer.open(sealed, context: "tenant-a/user-1/enrolment-1") == secret)
        #expect(sealer.open(sealed, context: "tenant-b/user-1/enrolment-1") == nil)
        // Rotated: the new key seals, the old one still opens what it sealed.
        let rotated = try #require(SecretSealer(keys: [new, old]))
        #expect(rotated.open(sealed, context: "tenant-a/user-1/enrolment-1") == secret)
        #expect(try rotated.seal(secret, context: "x").hasPrefix("v1.\(SecretSealer.keyID(new))."))
        // A key that is gone, a changed byte, or another form does not open.
        let withoutOld = try #require(SecretSealer(keys: [new]))
        #expect(withoutOld.open(sealed, context: "tenant-a/user-1/enrolment-1") == nil)
        var tampered = Array(sealed)
        tampered[tampered.count - 2] = tampered[tampered.count - 2] == "A" ? "B" : "A"
        #expect(sealer.open(String(tampered), context: "tenant-a/user-1/enrolment-1") == nil)
        #expect(sealer.open("v2." + sealed.dropFirst(3), context: "tenant-a/user-1/enrolment-1") == nil)
        #expect(SecretSealer(keys: []) == nil)
        #expect(SecretSealer(keys: [Array(old.prefix(16))]) == nil)
    }
}
