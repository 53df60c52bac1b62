import Foundation

/// A service account that signs custom tokens (docs/protocol/tokens.md#token-rules,
/// docs/protocol/admin.md#tesseras-own-admin-resources): its public key only.
struct ServiceAccount: Sendable {
    var accountId: String
    /// The project (may sign for any scope) or the one tenant it signs for.
    var owner: Owner
    var displayName: String
    var clientEmail: String
    var clientId: String
    var privateKeyId: String
    var publicKeyPem: String
    var createTime: Date
}
