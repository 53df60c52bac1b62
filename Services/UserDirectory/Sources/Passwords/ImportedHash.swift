import Crypto
import Foundation
import HummingbirdBcrypt
import TesseraShared
import _CryptoExtras

/// Verification of imported password hashes (A.9, B.7.1 import fields). They are never produced
/// here: a user signing in with one is re-hashed with Firebase scrypt and the project's key.
enum ImportedHash {
    static let algorithms: Set<String> = ["STANDARD_SCRYPT", "BCRYPT", "PBKDF2_SHA256", "HMAC_SHA256"]

    static func verify(password: String, algorithm: String, params: ImportedParams, salt: Data, expected: Data) throws
        -> Bool
    {
        let passwordBytes = Data(password.utf8)
        let actual: Data
        switch algorithm {
        case "STANDARD_SCRYPT":
            guard let n = params.cpuMemCost, let r = params.blockSize, let p = params.parallelization,
                let length = params.dkLen, n > 1, n & (n - 1) == 0, (1...64).contains(r), (1...16).contains(p),
                length == expected.count
            else { return false }
            actual = try KDF.Scrypt.deriveKey(
                from: passwordBytes, salt: salt, outputByteCount: length, rounds: n, blockSize: r, parallelism: p
            ).withUnsafeBytes { Data($0) }
        case "BCRYPT":
            // The hash field holds the modular-crypt string (`$2a$10$…`) as bytes.
            guard let text = String(data: expected, encoding: .utf8) else { return false }
            return Bcrypt.verify(password, hash: text)
        case "PBKDF2_SHA256":
            guard let rounds = params.rounds, (1...10_000_000).contains(rounds), !expected.isEmpty else { return false }
            actual = try KDF.Insecure.PBKDF2.deriveKey(
                from: passwordBytes, salt: salt, using: .sha256, outputByteCount: expected.count,
                unsafeUncheckedRounds: rounds
            ).withUnsafeBytes { Data($0) }
        case "HMAC_SHA256":
            guard let keyText = params.signerKey, let key = Data(base64Encoded: keyText) else { return false }
            let message = params.passwordHashOrder == "PASSWORD_AND_SALT" ? passwordBytes + salt : salt + passwordBytes
            actual = Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        default:
            return false
        }
        return Secrets.constantTimeEquals(actual, expected)
    }
}
