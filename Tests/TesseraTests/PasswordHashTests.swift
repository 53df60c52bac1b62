import Foundation
import Testing

@testable import TesseraShared
@testable import UserDirectory

@Suite("password hashing")
struct PasswordHashTests {
    @Test("Firebase modified scrypt reproduces the published test vector (B.7.1)")
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

    @Test("stored parameters: the current ones are read without parsing, others by value; outdated ones re-hash")
    func storedParameters() async throws {
        let hasher = PasswordHasher(pool: HashingPool(threads: 1, queueLength: 4), rounds: 8, memCost: 8)
        let key = ProjectHashKey(signerKey: Array(repeating: 7, count: 64), saltSeparator: [1])
        let stored = try await hasher.hash("s3cret", key: key)
        #expect(stored.params == hasher.currentParams)
        #expect(!hasher.isOutdated(stored))
        #expect(try await hasher.verify("s3cret", stored: stored, key: key))
        #expect(!(try await hasher.verify("s3creT", stored: stored, key: key)))
        // The same values written another way (an import, another encoder): not outdated, still verifies.
        var reordered = stored
        reordered.params = #"{ "rounds": 8, "memCost": 8 }"#
        #expect(reordered.params != hasher.currentParams)
        #expect(!hasher.isOutdated(reordered))
        #expect(try await hasher.verify("s3cret", stored: reordered, key: key))
        // Other values are outdated; parameters that are not JSON never verify.
        var weaker = stored
        weaker.params = #"{"memCost":7,"rounds":8}"#
        #expect(hasher.isOutdated(weaker))
        #expect(!(try await hasher.verify("s3cret", stored: weaker, key: key)))
        var corrupt = stored
        corrupt.params = "memCost=8"
        #expect(hasher.isOutdated(corrupt))
        #expect(!(try await hasher.verify("s3cret", stored: corrupt, key: key)))
    }
}
