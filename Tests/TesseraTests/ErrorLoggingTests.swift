import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing

@testable import TesseraShared

/// Keeps what was logged, level and message, for a test to read.
final class CapturedLogs: Sendable {
    private let entries = Mutex<[(Logger.Level, String)]>([])

    var logger: Logger {
        var logger = Logger(label: "captured") { _ in Handler(logs: self) }
        logger.logLevel = .trace
        return logger
    }

    func levels(of message: String) -> [Logger.Level] {
        entries.withLock { $0.filter { $0.1 == message }.map(\.0) }
    }

    fileprivate func add(_ level: Logger.Level, _ message: String) { entries.withLock { $0.append((level, message)) } }

    private struct Handler: LogHandler {
        let logs: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) { logs.add(event.level, event.message.description) }
    }
}

private struct Fault: Error {}

@Suite("how answers are logged")
struct ErrorLoggingTests {
    @Test("a 503 the service chose is logged at debug level, a 500 at error level (issue 37: a storm's refusals)")
    func refusalsAreNotErrors() async throws {
        let logs = CapturedLogs()
        let router = Router(context: TesseraRequestContext.self)
        router.middlewares.add(FirebaseErrorMiddleware())
        router.post("refuse") { _, _ -> String in
            throw FirebaseError.unavailable(
                "Too many password operations in progress; retry shortly.", retryAfterSeconds: 2)
        }
        router.post("fault") { _, _ -> String in throw Fault() }
        let app = Application(router: router, logger: logs.logger)
        try await app.test(.router) { client in
            let refused = try await client.execute(uri: "/refuse", method: .post)
            #expect(refused.status == .serviceUnavailable && refused.headers[.retryAfter] == "2")
            #expect(logs.levels(of: "request") == [.debug])
            let failed = try await client.execute(uri: "/fault", method: .post)
            #expect(failed.status == .internalServerError)
            #expect(logs.levels(of: "request") == [.debug, .error])
            #expect(logs.levels(of: "unhandled error") == [.error])
        }
    }
}
