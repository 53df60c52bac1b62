import Foundation
import TesseraShared

/// A Firebase-scrypt hash key: signer key and salt separator.
public struct HashKey: Sendable, Equatable {
    public var signerKey: [UInt8]
    public var saltSeparator: [UInt8]

    /// Whether `other` is this key, signer key and salt separator, compared in constant time (a key
    /// a caller supplies or a stored one against the project's, which is secret).
    func isSame(as other: HashKey) -> Bool {
        hasSigner(other.signerKey) && Secrets.constantTimeEquals(Data(saltSeparator), Data(other.saltSeparator))
    }

    /// Whether `signer` is this key's signer key, compared in constant time.
    func hasSigner(_ signer: [UInt8]) -> Bool {
        Secrets.constantTimeEquals(Data(signerKey), Data(signer))
    }
}
