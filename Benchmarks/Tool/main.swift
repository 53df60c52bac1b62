import ArgumentParser
import Crypto
import Foundation
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

    func run() throws {
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
        // The directory's hashing path, with the project's kind of key material.
        let scrypt = FirebaseScrypt(
            signerKey: Array(Secrets.randomBytes(64)), saltSeparator: [0x42], rounds: rounds, memCost: memCost)
        let salt = Array(Secrets.randomBytes(12))
        let hashes = try measure(seconds: seconds) {
            _ = try scrypt.hash(password: "correct horse battery staple", salt: salt)
        }
        let report: [String: Double] = [
            "rs256_signatures_per_second": signatures,
            "rs256_signer_is_openssl": signer.isNative ? 1 : 0,
            "rs256_swift_crypto_signatures_per_second": boringSignatures,
            "firebase_scrypt_hashes_per_second": hashes,
            "scrypt_rounds": Double(rounds),
            "scrypt_mem_cost": Double(memCost),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
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
        return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
