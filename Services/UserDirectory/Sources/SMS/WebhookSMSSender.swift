import AsyncHTTPClient
import Crypto
import Foundation
import TesseraShared

/// Delivers through the operator's own HTTPS endpoint (`TESSERA_SMS_SENDER=webhook`; docs/design-notes.md,
/// "SMS delivery"): a JSON POST `{"to", "body", "scope", "id"}` signed with
/// `X-Tessera-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` under the shared
/// secret. A 2xx answer is delivered; a 4xx other than 408 and 429 is permanent; anything else, or no
/// answer within the timeout, is tried again (with the same `id`).
public struct WebhookSMSSender: SMSSender {
    public struct Configuration: Sendable {
        public var url: String
        public var secret: String

        public init(url: String, secret: String) {
            self.url = url
            self.secret = secret
        }
    }

    /// The signature header.
    public static let signatureHeader = "X-Tessera-Signature"

    let configuration: Configuration
    let client: HTTPClient
    let timeout: Duration
    let now: @Sendable () -> Date

    public init(
        configuration: Configuration, client: HTTPClient, timeout: Duration,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.client = client
        self.timeout = timeout
        self.now = now
    }

    struct Payload: Encodable {
        var to: String
        var body: String
        /// The tenant's id; `""` for the project's default scope.
        var scope: String
        var id: String
    }

    /// The request body, exactly as it is signed and sent.
    static func payload(_ message: SMSMessage) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(
            Payload(to: message.to, body: message.body, scope: message.scope.key, id: String(message.id)))
    }

    /// `t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>.<body>" under secret>`.
    public static func signature(secret: String, timestamp: Int64, body: Data) -> String {
        var signed = Data("\(timestamp).".utf8)
        signed.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Data(secret.utf8)))
        return "t=\(timestamp),v1=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    public func send(_ message: SMSMessage) async throws {
        let body = try Self.payload(message)
        let timestamp = Int64(now().timeIntervalSince1970.rounded(.down))
        let answer = try await SMSHTTP.post(
            configuration.url,
            headers: [
                ("Content-Type", "application/json"),
                (Self.signatureHeader, Self.signature(secret: configuration.secret, timestamp: timestamp, body: body)),
            ],
            body: body, client: client, timeout: timeout, what: "the SMS webhook")
        guard (200...299).contains(answer.status) else {
            let detail = "the SMS webhook answered \(answer.status)"
            throw SMSHTTP.isRetryable(status: answer.status)
                ? SMSDeliveryError.retryable(detail) : SMSDeliveryError.permanent(detail)
        }
    }
}
