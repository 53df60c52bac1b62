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
}
