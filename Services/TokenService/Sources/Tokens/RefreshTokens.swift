import Crypto
import Foundation
import TesseraShared

/// Refresh tokens are 256 random bits from the system CSPRNG, base64url; the directory stores only
/// their SHA-256.
public enum RefreshTokens {
    public static func generate() -> String {
        Base64URL.encode(Secrets.randomBytes(32))
    }

    public static func isWellFormed(_ token: String) -> Bool {
        token.count == 43 && Base64URL.decode(token)?.count == 32
    }

    static func sealingKey(for token: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Data(token.utf8)),
            info: Data("tessera refresh-token successor".utf8), outputByteCount: 32)
    }

    /// Seals `successor` so that only a holder of `token` can open it.
    public static func seal(successor: String, with token: String) throws -> String {
        let box = try AES.GCM.seal(Data(successor.utf8), using: sealingKey(for: token))
        guard let combined = box.combined else { throw FirebaseError.internal }
        return Base64URL.encode(combined)
    }

    public static func open(_ sealed: String, with token: String) throws -> String {
        guard let data = Base64URL.decode(sealed),
            let plain = try? AES.GCM.open(AES.GCM.SealedBox(combined: data), using: sealingKey(for: token)),
            let successor = String(data: plain, encoding: .utf8)
        else { throw FirebaseError.invalid(.invalidRefreshToken) }
        return successor
    }
}
