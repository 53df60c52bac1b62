import Foundation
import Logging
import NIOPosix
import Prometheus
import ServiceLifecycle
import Synchronization
import TesseraShared

/// Runs password hashing on its own threads, never on the request threads, with bounded
/// concurrency: when more than `capacity` hashes are running or waiting, the caller gets a 503 with
/// `Retry-After` at once instead of joining an unbounded pile-up (A.9).
public final class HashingPool: Sendable {
    let pool: NIOThreadPool
    let capacity: Int
    private let inFlight = Atomic<Int>(0)
    let depthGauge: Gauge?
    let waitTime: DurationHistogram?
    let refused: Counter?

    public init(threads: Int, queueLength: Int, metrics: ServiceMetrics? = nil) {
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
        capacity = max(1, threads) + max(0, queueLength)
        depthGauge = metrics?.gauge(
            "password_hash_queue_depth", unit: "operations", help: "Password hashes running or waiting.")
        waitTime = metrics?.latency(
            "password_hash_wait", help: "Time a password hash waits for a hashing thread.")
        refused = metrics?.counter(
            "password_hash_refused", help: "Password operations refused with 503 because the queue was full.")
    }

    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let admitted = inFlight.add(1, ordering: .relaxed).newValue
        depthGauge?.set(Double(admitted))
        defer {
            // Not inside `depthGauge?.set(…)`: optional chaining would skip the subtraction without a gauge.
            let remaining = inFlight.subtract(1, ordering: .relaxed).newValue
            depthGauge?.set(Double(remaining))
        }
        guard admitted <= capacity else {
            refused?.increment()
            throw FirebaseError.unavailable(
                "Too many password operations in progress; retry shortly.", retryAfterSeconds: 1)
        }
        let queued = ContinuousClock.now
        let waitTime = self.waitTime
        return try await pool.runIfActive {
            waitTime?.record(ContinuousClock.now - queued)
            return try body()
        }
    }

    public var depth: Int { inFlight.load(ordering: .relaxed) }

    public func shutdown() async throws {
        try await pool.shutdownGracefully()
    }
}

/// Stops the hashing threads after graceful shutdown has begun.
struct HashingPoolService: Service {
    let pool: HashingPool
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        do {
            try await pool.shutdown()
        } catch {
            logger.warning("hashing pool shutdown failed", metadata: ["error": "\(error)"])
        }
    }
}

/// A stored password: algorithm, parameters, salt and hash, per user (A.9).
public struct StoredPassword: Sendable, Equatable {
    public var algorithm: String
    public var params: String
    public var salt: String
    public var hash: String

    public static let firebaseScrypt = "SCRYPT"
}

/// The parameters stored with a hash (JSON in `users.password_params`). Native hashes carry
/// `rounds` and `memCost` and use their scope's signer key; imported ones carry what their algorithm
/// needs, including their own signer key (A.9).
struct ScryptParams: Codable, Equatable {
    var rounds: Int
    var memCost: Int
    /// Base64; absent for hashes made with a key of the scope's.
    var signerKey: String?
    var saltSeparator: String?
    /// A tenant's hash made with the project's key, before tenants had keys of their own (migration
    /// 14 marks them). It verifies with the project's key and is re-made with the tenant's at the
    /// user's next sign-in.
    var projectKey: Bool?
}

struct ImportedParams: Codable, Equatable {
    // STANDARD_SCRYPT
    var cpuMemCost: Int?
    var blockSize: Int?
    var parallelization: Int?
    var dkLen: Int?
    // PBKDF2_SHA256
    var rounds: Int?
    // HMAC_SHA256 (base64 key); SALT_AND_PASSWORD or PASSWORD_AND_SALT
    var signerKey: String?
    var passwordHashOrder: String?
}

/// A Firebase-scrypt hash key: signer key and salt separator.
public struct HashKey: Sendable, Equatable {
    public var signerKey: [UInt8]
    public var saltSeparator: [UInt8]
}

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
}

/// Hashes new passwords with the configured parameters and verifies stored ones per their own
/// algorithm and parameters.
public struct PasswordHasher: Sendable {
    let pool: HashingPool
    /// The parameters of every native hash made now (Firebase's are rounds 8, mem_cost 14), and their
    /// stored form (JSON, sorted keys). A stored hash with exactly that text is read without parsing
    /// it: most sign-ins.
    private let current: ScryptParams
    let currentParams: String

    public init(pool: HashingPool, rounds: Int = 8, memCost: Int = 14) {
        self.pool = pool
        current = ScryptParams(rounds: rounds, memCost: memCost, signerKey: nil, saltSeparator: nil, projectKey: nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        currentParams = String(decoding: try! encoder.encode(current), as: UTF8.self)
    }

    /// A stored Firebase-scrypt hash's parameters (nil if they are not valid JSON of them).
    func scryptParams(_ params: String) -> ScryptParams? {
        params == currentParams ? current : try? JSONDecoder().decode(ScryptParams.self, from: Data(params.utf8))
    }

    public func hash(_ password: String, key: HashKey) async throws -> StoredPassword {
        let salt = Secrets.randomBytes(12)
        let scrypt = FirebaseScrypt(
            signerKey: key.signerKey, saltSeparator: key.saltSeparator, rounds: current.rounds,
            memCost: current.memCost)
        let hash = try await pool.run { try scrypt.hash(password: password, salt: salt) }
        return StoredPassword(
            algorithm: StoredPassword.firebaseScrypt, params: currentParams, salt: Data(salt).base64EncodedString(),
            hash: Data(hash).base64EncodedString())
    }

    /// True when `password` matches, per the hash's own algorithm and parameters. Unknown
    /// algorithms or corrupt records never match.
    public func verify(_ password: String, stored: StoredPassword, keys: ScopeHashKeys) async throws -> Bool {
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
            return try await pool.run {
                try scrypt.verify(password: password, salt: Array(salt), expected: Array(expected))
            }
        default:
            guard let p = try? JSONDecoder().decode(ImportedParams.self, from: Data(stored.params.utf8)) else {
                return false
            }
            return try await pool.run {
                try ImportedHash.verify(
                    password: password, algorithm: stored.algorithm, params: p, salt: salt, expected: expected)
            }
        }
    }

    /// The parameters native hashes are made with, as the project's hash config publishes them.
    public var hashConfig: (rounds: Int, memCost: Int) { (current.rounds, current.memCost) }

    /// Costs what a verification costs, for accounts that do not exist: answers for unknown and
    /// known emails then take comparable time (B.5.9).
    public func burn(_ password: String, key: HashKey) async throws {
        _ = try await hash(password, key: key)
    }

    /// Whether a stored password should be re-hashed with the current parameters after a
    /// successful sign-in (a tenant's hash made with the project's key included).
    public func isOutdated(_ stored: StoredPassword) -> Bool {
        stored.algorithm != StoredPassword.firebaseScrypt
            || scryptParams(stored.params) != current
    }
}
