import Logging
import ServiceLifecycle

/// Stops the hashing threads, then the hash worker process if there is one, after graceful shutdown
/// has begun.
struct HashingPoolService: Service {
    let pool: HashingPool
    var worker: HashWorker?
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        do {
            try await pool.shutdown()
        } catch {
            logger.warning("hashing pool shutdown failed", metadata: ["error": "\(error)"])
        }
        worker?.shutdown()
    }
}
