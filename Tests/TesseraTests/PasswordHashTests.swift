import Foundation
import Testing

@testable import TesseraShared
@testable import UserDirectory

@Suite("password hashing")
struct PasswordHashTests {
    /// docs/protocol/accounts.md#firebase-scrypt
    @Test("Firebase modified scrypt reproduces the published test vector")
    func firebaseScryptTestVector() throws {
        let scrypt = FirebaseScrypt(
            signerKey: Array(
                Data(
                    base64Encoded:
                        "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==")!),
            saltSeparator: Array(Data(base64Encoded: "Bw==")!), rounds: 8, memCost: 14)
        let salt = Array(Data(base64Encoded: "42xEC+ixf3L2lw==")!)
        let hash = try scrypt.hash(password: "user1password", salt: salt)
        #expect(
            Data(hash).base64EncodedString()
                == "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==")
        #expect(try scrypt.verify(password: "user1password", salt: salt, expected: hash))
        #expect(!(try scrypt.verify(password: "user1passwore", salt: salt, expected: hash)))
        #expect(!(try scrypt.verify(password: "user1password", salt: salt + [0], expected: hash)))
    }

    @Test("imported hash limits: costs a verification can afford, bcrypt strings, hash lengths")
    func importLimits() {
        typealias Limits = ImportedHash.Limits
        #expect(Limits.standardScryptError(n: 16384, r: 8, p: 1, dkLen: 64) == nil)
        #expect(Limits.standardScryptError(n: 1 << 17, r: 8, p: 1, dkLen: 32) == nil)
        #expect(Limits.standardScryptError(n: 1 << 56, r: 8, p: 1, dkLen: 3)?.rawValue == "INVALID_HASH_MEMORY_COST")
        #expect(Limits.standardScryptError(n: 1000, r: 8, p: 1, dkLen: 64)?.rawValue == "INVALID_HASH_MEMORY_COST")
        #expect(Limits.standardScryptError(n: 1 << 18, r: 8, p: 1, dkLen: 64)?.rawValue == "INVALID_HASH_MEMORY_COST")
        #expect(Limits.standardScryptError(n: 1 << 16, r: 1, p: 1, dkLen: 64)?.rawValue == "INVALID_HASH_BLOCK_SIZE")
        #expect(Limits.standardScryptError(n: 1024, r: 17, p: 1, dkLen: 64)?.rawValue == "INVALID_HASH_BLOCK_SIZE")
        #expect(Limits.standardScryptError(n: 1024, r: 8, p: 17, dkLen: 64)?.rawValue == "INVALID_HASH_PARALLELIZATION")
        #expect(Limits.standardScryptError(n: 1 << 17, r: 8, p: 5, dkLen: 64)?.rawValue == "INVALID_HASH_MEMORY_COST")
        #expect(
            Limits.standardScryptError(n: 1024, r: 8, p: 1, dkLen: 0)?.rawValue == "INVALID_HASH_DERIVED_KEY_LENGTH")
        #expect(Limits.standardScryptError(n: nil, r: 8, p: 1, dkLen: 64)?.rawValue == "INVALID_HASH_MEMORY_COST")
        let bcrypt = Data("$2b$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234".utf8)
        #expect(Limits.bcryptCost(of: bcrypt) == 10)
        #expect(Limits.bcryptCost(of: Data("$2b$10$short".utf8)) == nil)
        #expect(Limits.bcryptCost(of: Data("$1$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ012345".utf8)) == nil)
        let params = ImportedParams()
        #expect(Limits.hashError(bcrypt, algorithm: "BCRYPT", params: params) == nil)
        let slow = Data("$2b$31$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234".utf8)
        #expect(Limits.hashError(slow, algorithm: "BCRYPT", params: params) == "bcrypt cost must be 4 to 14")
        #expect(Limits.hashError(Data(), algorithm: "PBKDF2_SHA256", params: params) == "passwordHash is invalid")
        #expect(Limits.hashError(Data(count: 257), algorithm: "HMAC_SHA256", params: params) != nil)
    }

    @Test("stored hashes outside the limits, or empty, never verify and never trap")
    func verificationRefusesWhatImportRefuses() throws {
        let salt = Data("salt".utf8)
        // The parameters that overflowed swift-crypto's memory arithmetic or failed in BoringSSL.
        for (n, r, p) in [(1 << 56, 8, 1), (65536, 1, 1), (1 << 33, 8, 1), (1024, 17, 1)] {
            let params = ImportedParams(cpuMemCost: n, blockSize: r, parallelization: p, dkLen: 3)
            #expect(
                !(try ImportedHash.verify(
                    password: "whatever1", algorithm: "STANDARD_SCRYPT", params: params, salt: salt,
                    expected: Data([1, 2, 3]))))
        }
        let pbkdf2 = ImportedParams(rounds: 10_000_000)
        #expect(
            !(try ImportedHash.verify(
                password: "p", algorithm: "PBKDF2_SHA256", params: pbkdf2, salt: salt, expected: Data(count: 32))))
        let emptyKey = ImportedParams(signerKey: "")
        #expect(
            !(try ImportedHash.verify(
                password: "p", algorithm: "HMAC_SHA256", params: emptyKey, salt: salt, expected: Data())))
        // An empty signer key and hash matched every password.
        let scrypt = FirebaseScrypt(signerKey: [], saltSeparator: [], rounds: 1, memCost: 1)
        #expect(!(try scrypt.verify(password: "anything", salt: [1], expected: [])))
        let keyed = FirebaseScrypt(signerKey: [1, 2, 3], saltSeparator: [], rounds: 1, memCost: 1)
        #expect(!(try keyed.verify(password: "anything", salt: [1], expected: [])))
    }

    @Test("a stored hash beyond the limits is recognised, so the refusal can say why")
    func storedBeyondLimits() {
        func stored(_ algorithm: String, _ params: String, hash: Data = Data(count: 32)) -> StoredPassword {
            StoredPassword(algorithm: algorithm, params: params, salt: "", hash: hash.base64EncodedString())
        }
        #expect(ImportedHash.isBeyondLimits(stored("PBKDF2_SHA256", #"{"rounds":10000000}"#)))
        #expect(!ImportedHash.isBeyondLimits(stored("PBKDF2_SHA256", #"{"rounds":600000}"#)))
        #expect(
            ImportedHash.isBeyondLimits(
                stored("STANDARD_SCRYPT", #"{"blockSize":32,"cpuMemCost":1024,"dkLen":32,"parallelization":1}"#)))
        #expect(
            !ImportedHash.isBeyondLimits(
                stored("STANDARD_SCRYPT", #"{"blockSize":8,"cpuMemCost":1024,"dkLen":32,"parallelization":1}"#)))
        let slow = Data("$2b$15$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234".utf8)
        #expect(ImportedHash.isBeyondLimits(stored("BCRYPT", "{}", hash: slow)))
        #expect(!ImportedHash.isBeyondLimits(stored(StoredPassword.firebaseScrypt, #"{"memCost":14,"rounds":8}"#)))
    }

    @Test("stored parameters: the current ones are read without parsing, others by value; outdated ones re-hash")
    func storedParameters() async throws {
        let hasher = PasswordHasher(pool: HashingPool(threads: 1, queueLength: 4), rounds: 8, memCost: 8)
        let key = HashKey(signerKey: Array(repeating: 7, count: 64), saltSeparator: [1])
        let keys = ScopeHashKeys(own: key, project: key)
        let stored = try await hasher.hash("s3cret", key: key)
        #expect(stored.params == hasher.currentParams)
        #expect(!hasher.isOutdated(stored))
        #expect(try await hasher.verify("s3cret", stored: stored, keys: keys))
        #expect(!(try await hasher.verify("s3creT", stored: stored, keys: keys)))
        // The same values written another way (an import, another encoder): not outdated, still verifies.
        var reordered = stored
        reordered.params = #"{ "rounds": 8, "memCost": 8 }"#
        #expect(reordered.params != hasher.currentParams)
        #expect(!hasher.isOutdated(reordered))
        #expect(try await hasher.verify("s3cret", stored: reordered, keys: keys))
        // Other values are outdated; parameters that are not JSON never verify.
        var weaker = stored
        weaker.params = #"{"memCost":7,"rounds":8}"#
        #expect(hasher.isOutdated(weaker))
        #expect(!(try await hasher.verify("s3cret", stored: weaker, keys: keys)))
        var corrupt = stored
        corrupt.params = "memCost=8"
        #expect(hasher.isOutdated(corrupt))
        #expect(!(try await hasher.verify("s3cret", stored: corrupt, keys: keys)))
    }

    @Test("a tenant's hash from before it had a key verifies with the project's key, is outdated and not the tenant's")
    func projectKeyHashes() async throws {
        let hasher = PasswordHasher(pool: HashingPool(threads: 1, queueLength: 4), rounds: 8, memCost: 8)
        let project = HashKey(signerKey: Array(repeating: 7, count: 64), saltSeparator: [1])
        let tenant = HashKey(signerKey: Array(repeating: 9, count: 64), saltSeparator: [2, 3])
        let keys = ScopeHashKeys(own: tenant, project: project)
        var legacy = try await hasher.hash("s3cret", key: project)
        // Without the mark it is read as the tenant's own and does not verify.
        #expect(!(try await hasher.verify("s3cret", stored: legacy, keys: keys)))
        legacy.params = #"{"memCost":8,"projectKey":true,"rounds":8}"#
        #expect(try await hasher.verify("s3cret", stored: legacy, keys: keys))
        #expect(hasher.isOutdated(legacy), "re-made with the tenant's key at the next sign-in")
        let own = try await hasher.hash("s3cret", key: tenant)
        #expect(try await hasher.verify("s3cret", stored: own, keys: keys))
        #expect(!hasher.isOutdated(own))
    }
}
