import Crypto
import Foundation
import HummingbirdBcrypt
import TesseraShared
import _CryptoExtras

/// Verification of imported password hashes (docs/protocol/accounts.md#passwords, #firebase-scrypt import
/// fields). They are never produced here: a user signing in with one is re-hashed with Firebase scrypt and
/// the project's key.
enum ImportedHash {
    static let algorithms: Set<String> = ["STANDARD_SCRYPT", "BCRYPT", "PBKDF2_SHA256", "HMAC_SHA256"]

    /// Import's bounds on what one verification may cost, checked when the hash is imported and
    /// again before it is verified (a stored hash is never trusted to be sane). Each verification
    /// holds a hashing thread, so an unbounded cost would stall every password operation.
    enum Limits {
        /// STANDARD_SCRYPT: working memory 128·r·N of at most 128 MiB, and N·r·p at most 2^22 (32
        /// times Firebase's own hash); r ≤ 16 and p ≤ 16; N a power of two below 2^(16·r), as
        /// BoringSSL requires; a derived key of 1–256 bytes.
        static func standardScryptError(n: Int?, r: Int?, p: Int?, dkLen: Int?) -> ErrorCode? {
            guard let n, n > 1, n <= 1 << 20, n & (n - 1) == 0 else { return .invalidHashMemoryCost }
            // (Past 63 bits a shift gives 0 in Swift; every N allowed here is below 2^(16·r) then.)
            guard let r, (1...16).contains(r), 16 * r >= 63 || n < 1 << (16 * r) else {
                return .invalidHashBlockSize
            }
            guard let p, (1...16).contains(p) else { return .invalidHashParallelization }
            guard r * n <= 1 << 20, n * r * p <= 1 << 22 else { return .invalidHashMemoryCost }
            guard let dkLen, (1...256).contains(dkLen) else { return .invalidHashDerivedKeyLength }
            return nil
        }
        /// PBKDF2_SHA256 iterations (OWASP's 2023 advice is 600,000).
        static let pbkdf2Rounds = 1...2_000_000
        /// bcrypt's cost (log2 of its rounds); 14 takes about a second on one core.
        static let bcryptCosts = 4...14
        /// Length of an imported hash, in bytes (a bcrypt string is 60).
        static let hashBytes = 1...256

        /// The cost of a modular-crypt bcrypt string (`$2a$`, `$2b$` or `$2y$`, two digits, `$`,
        /// 53 characters), or nil when it is not one.
        static func bcryptCost(of hash: Data) -> Int? {
            let bytes = Array(hash)
            guard bytes.count == 60, bytes[0] == UInt8(ascii: "$"), bytes[1] == UInt8(ascii: "2"),
                [UInt8(ascii: "a"), UInt8(ascii: "b"), UInt8(ascii: "y")].contains(bytes[2]),
                bytes[3] == UInt8(ascii: "$"), bytes[6] == UInt8(ascii: "$"),
                let cost = Int(String(decoding: bytes[4...5], as: UTF8.self))
            else { return nil }
            return cost
        }

        /// Why an algorithm's parameters cannot be imported (a request-wide error code), or nil.
        static func paramsError(algorithm: String, params: ImportedParams) -> ErrorCode? {
            switch algorithm {
            case "STANDARD_SCRYPT":
                return standardScryptError(
                    n: params.cpuMemCost, r: params.blockSize, p: params.parallelization, dkLen: params.dkLen)
            case "PBKDF2_SHA256":
                return pbkdf2Rounds.contains(params.rounds ?? 0) ? nil : .invalidHashRounds
            case "HMAC_SHA256":
                let key = params.signerKey.flatMap { Data(base64Encoded: $0) } ?? Data()
                return key.isEmpty ? .missingSignerKey : nil
            default:
                return nil
            }
        }

        /// Why `hash` cannot be imported for `algorithm` (a per-user message), or nil.
        static func hashError(_ hash: Data, algorithm: String, params: ImportedParams) -> String? {
            guard hashBytes.contains(hash.count) else { return "passwordHash is invalid" }
            switch algorithm {
            case "STANDARD_SCRYPT" where hash.count != params.dkLen:
                return "passwordHash length does not match dkLen"
            case "BCRYPT":
                guard let cost = bcryptCost(of: hash) else { return "passwordHash is not a bcrypt hash" }
                guard bcryptCosts.contains(cost) else { return "bcrypt cost must be 4 to 14" }
            default: break
            }
            return nil
        }

        /// Whether a verification of `hash` is within every bound above.
        static func allow(_ hash: Data, algorithm: String, params: ImportedParams) -> Bool {
            paramsError(algorithm: algorithm, params: params) == nil
                && hashError(hash, algorithm: algorithm, params: params) == nil
        }
    }

    /// Whether a stored imported hash is beyond the limits, so that no password will ever verify it
    /// (stored before the limits existed): the user must reset the password.
    static func isBeyondLimits(_ stored: StoredPassword) -> Bool {
        guard algorithms.contains(stored.algorithm),
            let params = try? JSONDecoder().decode(ImportedParams.self, from: Data(stored.params.utf8)),
            let hash = Data(base64Encoded: stored.hash)
        else { return false }
        return !Limits.allow(hash, algorithm: stored.algorithm, params: params)
    }

    static func verify(password: String, algorithm: String, params: ImportedParams, salt: Data, expected: Data) throws
        -> Bool
    {
        guard Limits.allow(expected, algorithm: algorithm, params: params) else { return false }
        let passwordBytes = Data(password.utf8)
        let actual: Data
        switch algorithm {
        case "STANDARD_SCRYPT":
            guard let n = params.cpuMemCost, let r = params.blockSize, let p = params.parallelization else {
                return false
            }
            actual = try KDF.Scrypt.deriveKey(
                from: passwordBytes, salt: salt, outputByteCount: expected.count, rounds: n, blockSize: r,
                parallelism: p
            ).withUnsafeBytes { Data($0) }
        case "BCRYPT":
            // The hash field holds the modular-crypt string (`$2a$10$…`) as bytes.
            guard let text = String(data: expected, encoding: .utf8) else { return false }
            return Bcrypt.verify(password, hash: text)
        case "PBKDF2_SHA256":
            guard let rounds = params.rounds else { return false }
            actual = try KDF.Insecure.PBKDF2.deriveKey(
                from: passwordBytes, salt: salt, using: .sha256, outputByteCount: expected.count,
                unsafeUncheckedRounds: rounds
            ).withUnsafeBytes { Data($0) }
        case "HMAC_SHA256":
            guard let key = params.signerKey.flatMap({ Data(base64Encoded: $0) }) else { return false }
            let message = params.passwordHashOrder == "PASSWORD_AND_SALT" ? passwordBytes + salt : salt + passwordBytes
            actual = Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        default:
            return false
        }
        return Secrets.constantTimeEquals(actual, expected)
    }
}
