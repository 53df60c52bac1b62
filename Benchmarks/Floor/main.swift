import Crypto
import Foundation
import Hummingbird
import Logging
import NIOPosix
import PostgresNIO
import _CryptoExtras

/// `tessera-floor`: the smallest service of Tessera's stack that does what the directory does for a
/// password sign-in — an HTTP request, one PostgreSQL statement, one Firebase-scrypt hash
/// (N = 2^14, r = 8) on a pool of hashing threads — and nothing else. scripts/bench measures its
/// resident memory under the sign-in load to show what the directory's 64 MB target leaves for
/// everything but the hashes.
@main
struct Floor {
    static func main() async throws {
        let env = ProcessInfo.processInfo.environment
        let port = Int(env["FLOOR_PORT"] ?? "") ?? 39130
        let threads = Int(env["FLOOR_HASH_THREADS"] ?? "") ?? System.coreCount
        var logger = Logger(label: "tessera-floor")
        logger.logLevel = .warning
        guard let url = env["DATABASE_URL"], let components = URLComponents(string: url),
            let host = components.host, let user = components.user
        else {
            FileHandle.standardError.write(Data("tessera-floor: DATABASE_URL is required\n".utf8))
            exit(2)
        }
        let database = PostgresClient(
            configuration: .init(
                host: host, port: components.port ?? 5432, username: user, password: components.password,
                database: String(components.path.dropFirst()), tls: .disable),
            backgroundLogger: logger)
        let pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
        let router = Router()
        router.get("/healthz") { _, _ in "ok" }
        router.post("/hash") { request, context -> String in
            let body = try await request.body.collect(upTo: 4096)
            let password = Array(body.readableBytesView)
            var count = 0
            for try await _ in try await database.query("SELECT 1", logger: context.logger) { count += 1 }
            let derived = try await pool.runIfActive {
                try KDF.Scrypt.deriveKey(
                    from: password, salt: Array("saltsalt".utf8), outputByteCount: 32, rounds: 1 << 14,
                    blockSize: 8, parallelism: 1)
            }
            return derived.withUnsafeBytes { Data($0).base64EncodedString() } + " \(count)"
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        // The application stops on SIGTERM or SIGINT; the database client runs until it is cancelled.
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await database.run() }
            try await app.runService()
            group.cancelAll()
        }
        try await pool.shutdownGracefully()
    }
}
