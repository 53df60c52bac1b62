import Foundation
import TesseraShared

/// Hashes new passwords with the configured parameters and verifies stored ones per their own
/// algorithm and parameters.
public struct PasswordHasher: Sendable {
    let pool: HashingPool
    /// The parameters of every native hash made now (Firebase's are rounds 8, mem_cost 14), and their
    /// stored form (JSON, sorted keys). A stored hash with exactly that text is read without parsing
    /// it: most sign-ins.
    private let current: ScryptParams
    let currentParams: String
    /// Where Firebase-scrypt hashes run when they leave the directory's process (nil: on the pool's threads).
    let worker: HashWorker?

    public init(pool: HashingPool, rounds: Int = 8, memCost: Int = 14, worker: HashWorker? = nil) {
        self.pool = pool
        self.worker = worker
        current = ScryptParams(rounds: rounds, memCost: memCost, signerKey: nil, saltSeparator: nil, projectKey: nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        currentParams = String(decoding: try! encoder.encode(current), as: UTF8.self)
    }

    /// A stored Firebase-scrypt hash's parameters (nil if they are not valid JSON of them).
    func scryptParams(_ params: String) -> ScryptParams? {
        params == currentParams ? current : try? JSONDecoder().decode(ScryptParams.self, from: Data(params.utf8))
    }

    /// A new hash of `password`, for the client at address `client` if an end user's request asks
    /// for it (the pool's per-address share).
    public func hash(_ password: String, key: HashKey, client: String? = nil) async throws -> StoredPassword {
        let salt = Secrets.randomBytes(12)
        let scrypt = FirebaseScrypt(
            signerKey: key.signerKey, saltSeparator: key.saltSeparator, rounds: current.rounds,
            memCost: current.memCost)
        let hash = try await firebaseScrypt(scrypt, password: password, salt: salt, client: client)
        return StoredPassword(
            algorithm: StoredPassword.firebaseScrypt, params: currentParams, salt: Data(salt).base64EncodedString(),
            hash: Data(hash).base64EncodedString())
    }

    /// True when `password` matches, per the hash's own algorithm and parameters. Unknown
    /// algorithms or corrupt records never match.
    public func verify(_ password: String, stored: StoredPassword, keys: ScopeHashKeys, client: String? = nil)
        async throws -> Bool
    {
        guard let salt = Data(base64Encoded: stored.salt), let expected = Data(base64Encoded: stored.hash) else {
            return false
        }
        switch stored.algorithm {
        case StoredPassword.firebaseScrypt:
            guard let p = scryptParams(stored.params), (1...8).contains(p.rounds), (1...17).contains(p.memCost)
            else { return false }
            let key = keys.key(for: p)
            let scrypt = FirebaseScrypt(
                signerKey: key.signerKey, saltSeparator: key.saltSeparator, rounds: p.rounds, memCost: p.memCost)
            guard scrypt.canMatch(expected: Array(expected)) else { return false }
            let actual = try await firebaseScrypt(scrypt, password: password, salt: Array(salt), client: client)
            return FirebaseScrypt.matches(actual, expected: Array(expected))
        default:
            guard let p = try? JSONDecoder().decode(ImportedParams.self, from: Data(stored.params.utf8)) else {
                return false
            }
            return try await pool.run(client: client) {
                try ImportedHash.verify(
                    password: password, algorithm: stored.algorithm, params: p, salt: salt, expected: expected)
            }
        }
    }

    /// A Firebase-scrypt hash, in the worker process if there is one (and the password fits its
    /// message), else on a thread of the pool.
    private func firebaseScrypt(_ scrypt: FirebaseScrypt, password: String, salt: [UInt8], client: String?)
        async throws -> [UInt8]
    {
        guard let worker, HashWorker.carries(password: password, scrypt: scrypt) else {
            return try await pool.run(client: client) { try scrypt.hash(password: password, salt: salt) }
        }
        return try await pool.runMeasured(client: client) { try worker.hash(scrypt, password: password, salt: salt) }
    }

    /// The parameters native hashes are made with, as the project's hash config publishes them.
    public var hashConfig: (rounds: Int, memCost: Int) { (current.rounds, current.memCost) }

    /// Costs what a verification costs, for accounts that do not exist: answers for unknown and
    /// known emails then take comparable time (docs/protocol/accounts.md#email-enumeration-protection).
    public func burn(_ password: String, key: HashKey, client: String? = nil) async throws {
        _ = try await hash(password, key: key, client: client)
    }

    /// Whether a stored password should be re-hashed with the current parameters after a
    /// successful sign-in (a tenant's hash made with the project's key included).
    public func isOutdated(_ stored: StoredPassword) -> Bool {
        stored.algorithm != StoredPassword.firebaseScrypt
            || scryptParams(stored.params) != current
    }
}
