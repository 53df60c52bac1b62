import Testing

@testable import CleanupWorker
@testable import TesseraShared

@Suite("cleanup worker settings")
struct CleanupWorkerTests {
    let secret = ["TESSERA_INTERNAL_SECRET": strongTestSecret]

    @Test("a sweep pauses after each batch for the fixed pause plus the factor times the batch's own time")
    func pacing() throws {
        let defaults = try CleanupWorkerConfiguration(environment: ConfigReader(secret))
        #expect(defaults.batchPauseFactor == 1.25 && defaults.batchPause == .zero)
        #expect(defaults.pause(after: .milliseconds(40)) == .milliseconds(50))
        let configured = try CleanupWorkerConfiguration(
            environment: ConfigReader(
                secret.merging(["CLEANUP_BATCH_PAUSE": "10ms", "CLEANUP_BATCH_PAUSE_FACTOR": "2"]) { $1 }))
        #expect(configured.pause(after: .milliseconds(40)) == .milliseconds(90))
        let flatOut = try CleanupWorkerConfiguration(
            environment: ConfigReader(secret.merging(["CLEANUP_BATCH_PAUSE_FACTOR": "0"]) { $1 }))
        #expect(flatOut.pause(after: .seconds(1)) == .zero)
        for bad in ["-1", "101", "fast", "nan", "inf"] {
            #expect(throws: ConfigError.self, "\(bad)") {
                try CleanupWorkerConfiguration(
                    environment: ConfigReader(secret.merging(["CLEANUP_BATCH_PAUSE_FACTOR": bad]) { $1 }))
            }
        }
    }
}
