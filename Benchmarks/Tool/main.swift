import ArgumentParser
import Crypto
import Foundation
import Synchronization
import TesseraShared
import UserDirectory
import _CryptoExtras

/// `tessera-bench`: the raw limits the service benchmarks are compared with (scripts/bench).
@main
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tessera-bench", abstract: "Raw limits for scripts/bench.", subcommands: [Raw.self])
}

struct Raw: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "RS256 signatures (the token service's signer, and swift-crypto's for comparison) and Firebase-scrypt hashes per second on one core, with the code the services run; prints JSON."
    )
    @Option(help: "Seconds to measure each.") var seconds: Double = 3
    @Option(help: "Firebase-scrypt rounds (the services' default: 8).") var rounds: Int = 8
    @Option(help: "Firebase-scrypt mem cost (the services' default: 14).") var memCost: Int = 14
    @Option(help: "Hashing threads for the parallel scrypt figure (the directory's default: the core count).")
    var threads: Int = ProcessInfo.processInfo.activeProcessorCount
    @Flag(help: "Measure only the Firebase-scrypt figures (scripts/bench takes them again around the sign-in runs).")
    var scryptOnly = false

    func run() throws {
        var report: [String: Double] = [
            "scrypt_rounds": Double(rounds),
            "scrypt_mem_cost": Double(memCost),
        ]
        if !scryptOnly {
            try measureSignatures(into: &report)
        }
        // The directory's hashing path, with the project's kind of key material.
        let scrypt = FirebaseScrypt(
            signerKey: Array(Secrets.randomBytes(64)), saltSeparator: [0x42], rounds: rounds, memCost: memCost)
        let salt = Array(Secrets.randomBytes(12))
        report["firebase_scrypt_hashes_per_second"] = try measure(seconds: seconds) {
            _ = try scrypt.hash(password: "correct horse battery staple", salt: salt)
        }
        // The same hashes on `threads` threads at once, as the directory's hashing pool runs them: what
        // the cores allow together, shared caches and memory bandwidth included.
        report["firebase_scrypt_parallel_hashes_per_second"] = try measureParallel(
            threads: max(1, threads), seconds: seconds
        ) {
            _ = try scrypt.hash(password: "correct horse battery staple", salt: salt)
        }
        report["firebase_scrypt_parallel_threads"] = Double(max(1, threads))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
    }

    /// RS256 signatures per second with the token service's signer and with swift-crypto's.
    func measureSignatures(into report: inout [String: Double]) throws {
        // The token service's signing path: a 2048-bit key, a typical ID-token payload.
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let payload = Data(
            """
            {"iss":"https://securetoken.google.com/bench","aud":"bench","auth_time":1767225600,\
            "user_id":"0123456789abcdefghijklmnopqr","sub":"0123456789abcdefghijklmnopqr","iat":1767225600,\
            "exp":1767229200,"firebase":{"identities":{},"sign_in_provider":"anonymous"}}
            """.utf8)
        let signer = RS256Signer(privateKey: key)
        let signatures = try measure(seconds: seconds) {
            _ = try JWS.signRS256(payload: payload, kid: "bench", signer: signer)
        }
        // The same signature by swift-crypto (BoringSSL), for comparison.
        let boringSignatures = try measure(seconds: seconds) {
            _ = try JWS.signRS256(payload: payload, kid: "bench", key: key)
        }
        report["rs256_signatures_per_second"] = signatures
        report["rs256_signer_is_openssl"] = signer.isNative ? 1 : 0
        report["rs256_swift_crypto_signatures_per_second"] = boringSignatures
    }

    /// Operations per second of `body` on `threads` threads together, each after one warm-up call;
    /// the count stops at the same deadline for all of them.
    func measureParallel(threads: Int, seconds: Double, _ body: @escaping @Sendable () throws -> Void) throws -> Double
    {
        let counts = Mutex<[Int]>(Array(repeating: 0, count: threads))
        let failure = Mutex<(any Error)?>(nil)
        let ready = DispatchGroup()
        let finished = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        let clock = ContinuousClock()
        let deadline = Mutex<ContinuousClock.Instant>(clock.now)
        for index in 0..<threads {
            ready.enter()
            finished.enter()
            Thread.detachNewThread {
                defer { finished.leave() }
                do { try body() } catch { failure.withLock { $0 = error } }
                ready.leave()
                start.wait()
                let end = deadline.withLock { $0 }
                var count = 0
                do {
                    while clock.now < end {
                        try body()
                        count += 1
                    }
                } catch { failure.withLock { $0 = error } }
                counts.withLock { $0[index] = count }
            }
        }
        ready.wait()
        let began = clock.now
        deadline.withLock { $0 = began + .milliseconds(Int64(seconds * 1000)) }
        for _ in 0..<threads { start.signal() }
        finished.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        // Each thread finishes the operation under way at the deadline: divide by the time they took.
        let elapsed = clock.now - began
        let total = counts.withLock { $0.reduce(0, +) }
        return Double(total) / elapsed.timeInterval
    }

    /// Operations per second of `body` on this thread, after one warm-up call.
    func measure(seconds: Double, _ body: () throws -> Void) throws -> Double {
        try body()
        let clock = ContinuousClock()
        let start = clock.now
        let limit = Duration.milliseconds(Int64(seconds * 1000))
        var count = 0
        while clock.now - start < limit {
            try body()
            count += 1
        }
        let elapsed = clock.now - start
        return Double(count) / elapsed.timeInterval
    }
}
