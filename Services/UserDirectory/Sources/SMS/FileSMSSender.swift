import Foundation
import Synchronization
import TesseraShared

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// For development only (`TESSERA_SMS_SENDER=file`; docs/design-notes.md, "SMS delivery"): appends one JSON
/// line `{"to", "body", "scope", "id", "at"}` per message to a file of mode 0600. The file holds every
/// code sent: never point a deployment that real users reach at it.
public final class FileSMSSender: SMSSender {
    let path: String
    let now: @Sendable () -> Date
    /// One line at a time from this process (each line is one `write` to an `O_APPEND` file).
    private let writing = Mutex(())

    public init(path: String, now: @escaping @Sendable () -> Date = { Date() }) {
        self.path = path
        self.now = now
    }

    struct Line: Encodable {
        var to: String
        var body: String
        var scope: String
        var id: String
        var at: String
    }

    public func send(_ message: SMSMessage) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var line = try encoder.encode(
            Line(
                to: message.to, body: message.body, scope: message.scope.key, id: String(message.id),
                at: RFC3339.seconds(now())))
        line.append(0x0A)
        try writing.withLock { _ in try append(line) }
    }

    /// Creates the file (0600) if need be and checks that it can be written; run at start.
    public func check() throws {
        try writing.withLock { _ in try append(Data()) }
    }

    private func append(_ data: Data) throws {
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SMSDeliveryError.retryable("the SMS file cannot be opened (errno \(errno))")
        }
        defer { close(descriptor) }
        // A file that was there before keeps no wider mode than a new one gets.
        _ = fchmod(descriptor, 0o600)
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw SMSDeliveryError.retryable("the SMS file cannot be written (errno \(errno))")
                }
                offset += written
            }
        }
    }
}
