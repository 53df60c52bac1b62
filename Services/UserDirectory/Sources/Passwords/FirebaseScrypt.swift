import Crypto
import Foundation
import TesseraShared
import _CryptoExtras

/// Firebase's modified scrypt (docs/protocol/accounts.md#firebase-scrypt): the scrypt-derived key encrypts
/// the project's signer key with AES-256-CTR (zero IV); the ciphertext is the stored hash. Portable to and
/// from Firebase exports given the same signer key and salt separator.
public struct FirebaseScrypt: Sendable, Equatable {
    public var signerKey: [UInt8]
    public var saltSeparator: [UInt8]
    /// scrypt `r` (Firebase calls it rounds, 1…8).
    public var rounds: Int
    /// log2 of scrypt `N` (Firebase's mem_cost, 1…14).
    public var memCost: Int

    public init(signerKey: [UInt8], saltSeparator: [UInt8], rounds: Int, memCost: Int) {
        self.signerKey = signerKey
        self.saltSeparator = saltSeparator
        self.rounds = rounds
        self.memCost = memCost
    }

    public func hash(password: String, salt: [UInt8]) throws -> [UInt8] {
        let derived = try KDF.Scrypt.deriveKey(
            from: Array(password.utf8), salt: salt + saltSeparator, outputByteCount: 32,
            rounds: 1 << memCost, blockSize: rounds, parallelism: 1)
        let nonce = try AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16))
        return Array(try AES._CTR.encrypt(signerKey, using: derived, nonce: nonce))
    }

    public func verify(password: String, salt: [UInt8], expected: [UInt8]) throws -> Bool {
        guard canMatch(expected: expected) else { return false }
        return Self.matches(try hash(password: password, salt: salt), expected: expected)
    }

    /// Whether any password can match `expected`: an empty key encrypts to nothing, which would match
    /// an empty stored hash for any password.
    func canMatch(expected: [UInt8]) -> Bool { !signerKey.isEmpty && !expected.isEmpty }

    /// Whether a hash is the stored one, compared in constant time.
    static func matches(_ actual: [UInt8], expected: [UInt8]) -> Bool {
        actual.count == expected.count && Secrets.constantTimeEquals(Data(actual), Data(expected))
    }
}
