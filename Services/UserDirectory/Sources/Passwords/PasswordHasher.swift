import Foundation
import Logging
import NIOPosix
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

    public init(threads: Int, queueLength: Int) {
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
        capacity = max(1, threads) + max(0, queueLength)
    }

    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let admitted = inFlight.add(1, ordering: .relaxed).newValue
        defer { inFlight.subtract(1, ordering: .relaxed) }
        guard admitted <= capacity else {
            throw FirebaseError.unavailable(
                "Too many password operations in progress; retry shortly.", retryAfterSeconds: 1)
        }
        return try await pool.runIfActive(body)
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

struct ScryptParams: Codable, Equatable {
    var rounds: Int
    var memCost: Int
}

/// The project's hash key: Firebase-scrypt signer key and salt separator.
public struct ProjectHashKey: Sendable, Equatable {
    public var signerKey: [UInt8]
    public var saltSeparator: [UInt8]
}

/// Hashes new passwords with the configured parameters and verifies stored ones per their own
/// algorithm and parameters.
public struct PasswordHasher: Sendable {
    let pool: HashingPool
    /// Parameters for new hashes (Firebase's are rounds 8, mem_cost 14).
    let rounds: Int
    let memCost: Int

    public init(pool: HashingPool, rounds: Int = 8, memCost: Int = 14) {
        self.pool = pool
        self.rounds = rounds
        self.memCost = memCost
    }

    var currentParams: String {
        String(decoding: try! JSONEncoder().encode(ScryptParams(rounds: rounds, memCost: memCost)), as: UTF8.self)
    }

    public func hash(_ password: String, key: ProjectHashKey) async throws -> StoredPassword {
        let salt = Secrets.randomBytes(12)
        let scrypt = FirebaseScrypt(
            signerKey: key.signerKey, saltSeparator: key.saltSeparator, rounds: rounds, memCost: memCost)
        let hash = try await pool.run { try scrypt.hash(password: password, salt: salt) }
        return StoredPassword(
            algorithm: StoredPassword.firebaseScrypt, params: currentParams, salt: Data(salt).base64EncodedString(),
            hash: Data(hash).base64EncodedString())
    }

    /// True when `password` matches. Unknown algorithms or corrupt records never match.
    public func verify(_ password: String, stored: StoredPassword, key: ProjectHashKey) async throws -> Bool {
        guard stored.algorithm == StoredPassword.firebaseScrypt,
            let params = try? JSONDecoder().decode(ScryptParams.self, from: Data(stored.params.utf8)),
            (1...8).contains(params.rounds), (1...17).contains(params.memCost),
            let salt = Data(base64Encoded: stored.salt), let expected = Data(base64Encoded: stored.hash)
        else { return false }
        let scrypt = FirebaseScrypt(
            signerKey: key.signerKey, saltSeparator: key.saltSeparator, rounds: params.rounds, memCost: params.memCost)
        return try await pool.run {
            try scrypt.verify(password: password, salt: Array(salt), expected: Array(expected))
        }
    }

    /// Costs what a verification costs, for accounts that do not exist: answers for unknown and
    /// known emails then take comparable time (B.5.9).
    public func burn(_ password: String, key: ProjectHashKey) async throws {
        _ = try await hash(password, key: key)
    }

    /// Whether a stored password should be re-hashed with the current parameters after a
    /// successful sign-in.
    public func isOutdated(_ stored: StoredPassword) -> Bool {
        stored.algorithm != StoredPassword.firebaseScrypt
            || (try? JSONDecoder().decode(ScryptParams.self, from: Data(stored.params.utf8)))
                != ScryptParams(rounds: rounds, memCost: memCost)
    }
}
