import Foundation
import TesseraShared

/// The hash keys of one scope (issue #23): its own, which every new hash is made with and its
/// `hashConfig` publishes, and the project's, which only verifies a tenant's hashes from before the
/// tenant had a key of its own. For the default scope both are the project's.
public struct ScopeHashKeys: Sendable, Equatable {
    public var own: HashKey
    public var project: HashKey

    /// The key a Firebase-scrypt hash with these parameters was made with.
    func key(for params: ScryptParams) -> HashKey {
        var key = params.projectKey == true ? project : own
        if let signer = params.signerKey.flatMap({ Data(base64Encoded: $0) }) { key.signerKey = Array(signer) }
        if let separator = params.saltSeparator.flatMap({ Data(base64Encoded: $0) }) {
            key.saltSeparator = Array(separator)
        }
        return key
    }

    /// The default scope, whose own key is the project's.
    var isProjectScope: Bool { own.isSame(as: project) }

    /// Whether a tenant's stored hash needs the project's signer key: marked `projectKey` (migration
    /// 14, or an import with the project's key), or naming that key itself (an import stored before
    /// imports recognised it, or an HMAC key that happens to be it). Such a hash is never exported
    /// from a tenant: its settings, or the hash with a password its admins know, would give them the
    /// project's key (docs/architecture.md, "Hash keys across scopes"). Always false in the default
    /// scope, where the project's key is the scope's own.
    func needsProjectKey(algorithm: String, params: String, hasher: PasswordHasher) -> Bool {
        guard !isProjectScope else { return false }
        let signer: String?
        if algorithm == StoredPassword.firebaseScrypt {
            guard let scrypt = hasher.scryptParams(params) else { return false }
            if scrypt.projectKey == true { return true }
            signer = scrypt.signerKey
        } else {
            signer = (try? JSONDecoder().decode(ImportedParams.self, from: Data(params.utf8)))?.signerKey
        }
        guard let bytes = signer.flatMap({ Data(base64Encoded: $0) }) else { return false }
        return project.hasSigner(Array(bytes))
    }

    /// The parameters stored with an imported Firebase-scrypt hash made with `signer` and
    /// `separator`. A key of Tessera's is never copied into the user's row: the scope's own key is
    /// left implicit (the hash is then native), and in a tenant the project's is marked `projectKey`
    /// as migration 14 marks older hashes, so that it verifies with the key Tessera holds, is re-made
    /// with the tenant's at the next sign-in and is never exported from the tenant. Any other key is
    /// the importer's own and is stored with the hash. Keys are compared in constant time.
    func importedParams(rounds: Int, memCost: Int, signer: [UInt8], separator: [UInt8]) -> ScryptParams {
        for (key, marked) in [(own, false), (project, true)] where key.hasSigner(signer) {
            let sameSeparator = Secrets.constantTimeEquals(Data(key.saltSeparator), Data(separator))
            return ScryptParams(
                rounds: rounds, memCost: memCost, signerKey: nil,
                saltSeparator: sameSeparator ? nil : Data(separator).base64EncodedString(),
                projectKey: marked ? true : nil)
        }
        return ScryptParams(
            rounds: rounds, memCost: memCost, signerKey: Data(signer).base64EncodedString(),
            saltSeparator: Data(separator).base64EncodedString())
    }
}
