import Crypto
import Foundation
import TesseraShared

/// Seals second-factor secrets for storage under keys the operator holds (AES-256-GCM): a database
/// dump or a replica alone does not give an attacker a user's TOTP seed. Each sealed value is bound
/// to the row it belongs to (`context`, as GCM's authenticated data: scope, user, enrolment), so a
/// value copied into another row does not open. Sealed values name their key, so keys can be
/// rotated: the first key seals, every key opens.
///
/// The form is `v1.<key id>.<base64url of nonce, ciphertext and tag>`; the key id is the first
/// 8 bytes of the key's SHA-256, in hex, which names a key without revealing it.
struct SecretSealer: Sendable {
    private let sealing: (id: String, key: SymmetricKey)
    private let opening: [String: SymmetricKey]

    /// `keys`: 32 bytes each; the first seals. Nil when there is none or one has another length.
    init?(keys: [[UInt8]]) {
        guard let first = keys.first, keys.allSatisfy({ $0.count == 32 }) else { return nil }
        let named = keys.map { (Self.keyID($0), SymmetricKey(data: $0)) }
        sealing = (Self.keyID(first), SymmetricKey(data: first))
        opening = Dictionary(named, uniquingKeysWith: { first, _ in first })
    }

    /// The keys of `TESSERA_MFA_KEYS` (docs/configuration.md): 32 bytes each in base64 or base64url,
    /// separated by commas, spaces or line breaks, the sealing key first. The message names the
    /// position of a bad key, never its value.
    static func parseKeys(_ text: String) throws -> [[UInt8]] {
        let items = text.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
        guard !items.isEmpty else { throw ConfigError.invalid("TESSERA_MFA_KEYS", "no key") }
        return try items.enumerated().map { index, item in
            let standard = item.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            let padded = standard + String(repeating: "=", count: (4 - standard.count % 4) % 4)
            guard let data = Data(base64Encoded: padded), data.count == 32 else {
                throw ConfigError.invalid(
                    "TESSERA_MFA_KEYS", "key \(index + 1) is not 32 bytes in base64 (openssl rand -base64 32)")
            }
            return Array(data)
        }
    }

    static func keyID(_ key: [UInt8]) -> String {
        SHA256.hash(data: key).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    func seal(_ secret: [UInt8], context: String) throws -> String {
        let box = try AES.GCM.seal(secret, using: sealing.key, authenticating: Data(context.utf8))
        guard let combined = box.combined else { throw FirebaseError.internal }
        return "v1.\(sealing.id).\(Base64URL.encode(combined))"
    }

    /// The secret, or nil when `sealed` is not one of ours, names a key this service does not hold,
    /// was changed, or belongs to another `context`.
    func open(_ sealed: String, context: String) -> [UInt8]? {
        let parts = sealed.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "v1", let key = opening[String(parts[1])],
            let combined = Base64URL.decode(String(parts[2])),
            let box = try? AES.GCM.SealedBox(combined: combined),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Data(context.utf8))
        else { return nil }
        return Array(plain)
    }
}
