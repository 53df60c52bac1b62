import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import TesseraShared
@testable import UserDirectory

/// What a fake SMS endpoint received.
final class ReceivedRequests: Sendable {
    struct Received: Sendable {
        var path: String
        var headers: HTTPFields
        var body: Data
    }

    private let received = Mutex<[Received]>([])
    var all: [Received] { received.withLock { $0 } }
    func record(_ request: Received) { received.withLock { $0.append(request) } }
}

/// A local HTTP server answering every POST with `status` and `body`, recording what it got.
func withFakeSMSEndpoint(
    status: HTTPResponse.Status = .ok, body: String = "{}",
    _ test: @Sendable (_ baseURL: String, _ received: ReceivedRequests) async throws -> Void
) async throws {
    let received = ReceivedRequests()
    let router = Router()
    router.post("**") { request, _ -> Response in
        let bytes = try await request.body.collect(upTo: 1 << 20)
        received.record(.init(path: request.uri.path, headers: request.headers, body: Data(bytes.readableBytesView)))
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: body)))
    }
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    try await app.test(.live) { client in
        try await test("http://127.0.0.1:\(try #require(client.port))", received)
    }
}

/// Runs `body` with an HTTP client for the senders, shut down afterwards.
func withSMSHTTPClient(_ body: (HTTPClient) async throws -> Void) async throws {
    let client = SMSHTTP.makeClient()
    do {
        try await body(client)
    } catch {
        try await client.shutdown()
        throw error
    }
    try await client.shutdown()
}

@Suite("SMS senders")
struct SMSSenderTests {
    static let secret = "test-secret-0123456789abcdef0123456789abcdef0123456789abcdef0123"
    let message = SMSMessage(id: 42, scope: Scope(wire: "t-1"), to: "+15555550100", body: "Your code is 123456")

    @Test("the webhook signature is HMAC-SHA256 of \"<t>.<raw body>\", as Python's hmac computes it")
    func webhookSignatureVector() throws {
        let body = try WebhookSMSSender.payload(message)
        #expect(
            String(decoding: body, as: UTF8.self)
                == #"{"body":"Your code is 123456","id":"42","scope":"t-1","to":"+15555550100"}"#)
        // python3 -c 'import hmac,hashlib; print(hmac.new(SECRET, b"1700000000." + BODY, hashlib.sha256).hexdigest())'
        #expect(
            WebhookSMSSender.signature(secret: Self.secret, timestamp: 1_700_000_000, body: body)
                == "t=1700000000,v1=415ff42f7675e6cbd688cd69c57373440d7541472fd9a55235346a2ad13b2b4a")
    }

    @Test("the webhook POSTs the signed JSON, and the receiver can verify the signature over the raw body")
    func webhookRequest() async throws {
        let message = self.message
        try await withFakeSMSEndpoint { base, received in
            try await withSMSHTTPClient { http in
                let sender = WebhookSMSSender(
                    configuration: .init(url: base + "/hooks/sms", secret: Self.secret), client: http,
                    timeout: .seconds(5), now: { Date(timeIntervalSince1970: 1_700_000_123.9) })
                try await sender.send(message)
            }
            let request = try #require(received.all.first)
            #expect(request.path == "/hooks/sms")
            #expect(request.headers[.contentType] == "application/json")
            let header = try #require(request.headers[HTTPField.Name("X-Tessera-Signature")!])
            // Verified as a receiver would: parse t and v1, recompute over the raw body, compare.
            let parts = Dictionary(
                uniqueKeysWithValues: header.split(separator: ",").map { part -> (String, String) in
                    let pair = part.split(separator: "=", maxSplits: 1)
                    return (String(pair[0]), String(pair[1]))
                })
            #expect(parts["t"] == "1700000123")
            var signed = Data("1700000123.".utf8)
            signed.append(request.body)
            let expected = HMAC<SHA256>.authenticationCode(
                for: signed, using: SymmetricKey(data: Data(Self.secret.utf8))
            ).map { String(format: "%02x", $0) }.joined()
            #expect(parts["v1"] == expected)
            let json = try #require(JSONSerialization.jsonObject(with: request.body) as? [String: String])
            #expect(json == ["to": "+15555550100", "body": "Your code is 123456", "scope": "t-1", "id": "42"])
        }
    }

    @Test(
        "the webhook's answer decides: 2xx sent, 4xx permanent but 408 and 429, others retried",
        arguments: [
            (200, nil), (204, nil), (400, true), (401, true), (404, true), (408, false), (429, false), (500, false),
            (503, false), (302, false),
        ] as [(Int, Bool?)])
    func webhookOutcomes(status: Int, permanent: Bool?) async throws {
        let message = self.message
        try await withFakeSMSEndpoint(status: .init(code: status)) { base, _ in
            try await withSMSHTTPClient { http in
                let sender = WebhookSMSSender(
                    configuration: .init(url: base + "/sms", secret: Self.secret), client: http, timeout: .seconds(5))
                do {
                    try await sender.send(message)
                    #expect(permanent == nil)
                } catch let error as SMSDeliveryError {
                    #expect(error.permanent == permanent)
                    #expect(!error.detail.contains(message.body))
                }
            }
        }
    }

    @Test("an unreachable webhook is a retryable failure")
    func webhookUnreachable() async throws {
        try await withSMSHTTPClient { http in
            // Port 1: nothing listens there.
            let sender = WebhookSMSSender(
                configuration: .init(url: "http://127.0.0.1:1/sms", secret: Self.secret), client: http,
                timeout: .seconds(2))
            let error = try await #require(throws: SMSDeliveryError.self) { try await sender.send(message) }
            #expect(!error.permanent)
        }
    }

    @Test("the Twilio sender POSTs Messages.json with Basic auth and To, Body and From")
    func twilioRequest() async throws {
        let message = self.message
        try await withFakeSMSEndpoint(status: .created, body: #"{"sid":"SM1","status":"queued"}"#) { base, received in
            try await withSMSHTTPClient { http in
                let sender = TwilioSMSSender(
                    configuration: .init(
                        accountSID: "AC123", authToken: "token-1", origin: .from("+15550001111"), baseURL: base + "/"),
                    client: http, timeout: .seconds(5))
                try await sender.send(message)
            }
            let request = try #require(received.all.first)
            #expect(request.path == "/2010-04-01/Accounts/AC123/Messages.json")
            #expect(request.headers[.authorization] == "Basic " + Data("AC123:token-1".utf8).base64EncodedString())
            #expect(request.headers[.contentType] == "application/x-www-form-urlencoded")
            let form = try #require(FormURLEncoded.parse(String(decoding: request.body, as: UTF8.self)))
            #expect(form == ["To": "+15555550100", "Body": "Your code is 123456", "From": "+15550001111"])
        }
    }

    @Test("a Twilio messaging service is named by MessagingServiceSid instead of From")
    func twilioMessagingService() throws {
        let sender = TwilioSMSSender(
            configuration: .init(accountSID: "AC123", authToken: "t", origin: .messagingService("MG9")),
            client: HTTPClient.shared, timeout: .seconds(5))
        let request = sender.request(for: message)
        #expect(request.url == "https://api.twilio.com/2010-04-01/Accounts/AC123/Messages.json")
        #expect(request.form.map(\.0) == ["To", "Body", "MessagingServiceSid"])
        #expect(request.form.last?.1 == "MG9")
    }

    @Test("Twilio's error is read for the log: a 400 is permanent, and the number it echoes is masked")
    func twilioError() async throws {
        let message = self.message
        let answer =
            #"{"code":21211,"message":"The 'To' number +15555550100 is not a valid phone number.","status":400}"#
        try await withFakeSMSEndpoint(status: .badRequest, body: answer) { base, _ in
            try await withSMSHTTPClient { http in
                let sender = TwilioSMSSender(
                    configuration: .init(
                        accountSID: "AC1", authToken: "t", origin: .from("+15550001111"), baseURL: base),
                    client: http, timeout: .seconds(5))
                let error = try await #require(throws: SMSDeliveryError.self) { try await sender.send(message) }
                #expect(error.permanent)
                #expect(error.detail.contains("400") && error.detail.contains("code 21211"))
                let logged = SMSRedaction.scrub(error.detail, of: message)
                #expect(logged.contains("+*******0100") && !logged.contains("+15555550100"))
            }
        }
        try await withFakeSMSEndpoint(status: .tooManyRequests, body: #"{"code":20429,"message":"Too Many Requests"}"#)
        {
            base, _ in
            try await withSMSHTTPClient { http in
                let sender = TwilioSMSSender(
                    configuration: .init(
                        accountSID: "AC1", authToken: "t", origin: .from("+15550001111"), baseURL: base),
                    client: http, timeout: .seconds(5))
                let error = try await #require(throws: SMSDeliveryError.self) { try await sender.send(message) }
                #expect(!error.permanent)
            }
        }
    }

    @Test("the file sender appends one JSON line per message to a file of mode 0600")
    func fileSender() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sms-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sender = FileSMSSender(path: path, now: { Date(timeIntervalSince1970: 1_700_000_000) })
        try sender.check()
        try await sender.send(message)
        try await sender.send(SMSMessage(id: 43, scope: .project, to: "+15555550101", body: "Code: 654321"))
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        let first = try #require(JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: String])
        #expect(
            first == [
                "to": "+15555550100", "body": "Your code is 123456", "scope": "t-1", "id": "42",
                "at": "2023-11-14T22:13:20Z",
            ])
        let second = try #require(JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: String])
        #expect(second["scope"] == "" && second["id"] == "43")
        let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
    }

    @Test("scrubbing removes the body and masks numbers but keeps short codes")
    func redaction() {
        let text = "refused Your code is 123456 for 15555550100 (+15555550100), error 21211"
        #expect(SMSRedaction.scrub(text, of: message) == "refused [body] for *******0100 (+*******0100), error 21211")
        #expect(SMSRedaction.mask("+15555550100") == "+*******0100")
    }

    @Test("the settings name what is missing or wrong")
    func settings() throws {
        #expect(try SMSDispatcher.Settings(environment: ConfigReader([:])).sender == nil)
        func problem(_ values: [String: String]) -> String? {
            do {
                _ = try SMSDispatcher.Settings(environment: ConfigReader(values))
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(problem(["TESSERA_SMS_SENDER": "webhook"])?.contains("TESSERA_SMS_WEBHOOK_URL") == true)
        #expect(
            problem(["TESSERA_SMS_SENDER": "webhook", "TESSERA_SMS_WEBHOOK_URL": "https://sms.example.com/hook"])?
                .contains("TESSERA_SMS_WEBHOOK_SECRET") == true)
        #expect(
            problem([
                "TESSERA_SMS_SENDER": "webhook", "TESSERA_SMS_WEBHOOK_URL": "https://sms.example.com/hook",
                "TESSERA_SMS_WEBHOOK_SECRET": "short",
            ])?.contains("TESSERA_SMS_WEBHOOK_SECRET") == true)
        #expect(
            problem([
                "TESSERA_SMS_SENDER": "webhook", "TESSERA_SMS_WEBHOOK_URL": "ftp://sms.example.com",
                "TESSERA_SMS_WEBHOOK_SECRET": Self.secret,
            ])?.contains("TESSERA_SMS_WEBHOOK_URL") == true)
        #expect(problem(["TESSERA_SMS_SENDER": "pigeon"])?.contains("TESSERA_SMS_SENDER") == true)
        #expect(problem(["TESSERA_SMS_SENDER": "file"])?.contains("TESSERA_SMS_FILE") == true)
        let twilio = ["TESSERA_SMS_SENDER": "twilio", "TESSERA_SMS_TWILIO_ACCOUNT_SID": "AC1"]
        #expect(problem(twilio)?.contains("TESSERA_SMS_TWILIO_AUTH_TOKEN") == true)
        #expect(
            problem(twilio.merging(["TESSERA_SMS_TWILIO_AUTH_TOKEN": "t"]) { $1 })?.contains("TESSERA_SMS_TWILIO_FROM")
                == true)
        #expect(
            problem(
                twilio.merging([
                    "TESSERA_SMS_TWILIO_AUTH_TOKEN": "t", "TESSERA_SMS_TWILIO_FROM": "+1555",
                    "TESSERA_SMS_TWILIO_MESSAGING_SERVICE_SID": "MG1",
                ]) { $1 })?.contains("not both") == true)
        #expect(
            problem(["TESSERA_SMS_SENDER": "twilio", "TESSERA_SMS_TWILIO_ACCOUNT_SID": "AC1/../x"])?.contains(
                "TESSERA_SMS_TWILIO_ACCOUNT_SID") == true)
        let parsed = try SMSDispatcher.Settings(
            environment: ConfigReader(
                twilio.merging([
                    "TESSERA_SMS_TWILIO_AUTH_TOKEN": "t", "TESSERA_SMS_TWILIO_MESSAGING_SERVICE_SID": "MG1",
                    "TESSERA_SMS_RETRY_BASE": "2s", "TESSERA_SMS_MAX_ATTEMPTS": "3",
                ]) { $1 }))
        guard case .twilio(let configuration) = parsed.sender else {
            Issue.record("expected the Twilio sender")
            return
        }
        #expect(configuration.origin == .messagingService("MG1"))
        #expect(configuration.baseURL == "https://api.twilio.com")
        #expect(parsed.retryBase == .seconds(2) && parsed.maxAttempts == 3)
    }
}

/// A sender for the dispatcher's tests: answers each message as `outcome` says, counting sends.
final class ScriptedSender: SMSSender {
    private let state = Mutex<[SMSMessage]>([])
    let outcome: @Sendable (SMSMessage) async throws -> Void

    init(outcome: @escaping @Sendable (SMSMessage) async throws -> Void = { _ in }) { self.outcome = outcome }

    var sent: [SMSMessage] { state.withLock { $0 } }

    func send(_ message: SMSMessage) async throws {
        state.withLock { $0.append(message) }
        try await outcome(message)
    }
}

@Suite("the SMS outbox on a real PostgreSQL", .enabled(if: PostgresSupport.available))
struct SMSOutboxPostgresTests {
    let logger = PostgresSupport.logger
    let scope = Scope(wire: "sms-1")

    func settings(retryBase: Duration = .seconds(5), maxAttempts: Int = 10) -> SMSDispatcher.Settings {
        var settings = SMSDispatcher.Settings(sender: nil)
        settings.retryBase = retryBase
        settings.maxAttempts = maxAttempts
        return settings
    }

    /// A tenant `sms-1` and one message queued for it, expiring after `lifetime`.
    func queue(_ client: Database, lifetime: TimeInterval = 300, body: String = "Your code is 123456") async throws
        -> Int64
    {
        try await client.query(
            "INSERT INTO tenants (tenant_id, display_name) VALUES (\(scope: scope), 'sms') ON CONFLICT DO NOTHING",
            logger: logger)
        return try await client.transaction(logger: logger) { connection in
            try await SMSOutbox.enqueue(
                connection, scope: scope, to: "+15555550100", body: body,
                expiresAt: Date().addingTimeInterval(lifetime), logger: logger)
        }
    }

    struct Row {
        var body: String?
        var attempts: Int
        var delivered: Bool
        var failed: Bool
        var lastError: String?
        var retryInSeconds: Double
    }

    func row(_ client: Database, _ id: Int64) async throws -> Row {
        let rows = try await client.query(
            """
            SELECT body, attempts, delivered_at IS NOT NULL, failed_at IS NOT NULL, last_error,
                extract(epoch FROM next_attempt_at - now())::float8
            FROM sms_outbox WHERE id = \(id)
            """, logger: logger)
        for try await (body, attempts, delivered, failed, lastError, retry) in rows.decode(
            (String?, Int, Bool, Bool, String?, Double).self)
        {
            return Row(
                body: body, attempts: attempts, delivered: delivered, failed: failed, lastError: lastError,
                retryInSeconds: retry)
        }
        throw SMSOutboxError.notQueued
    }

    @Test("a queued message is sent through the sender, marked delivered and its body cleared")
    func delivered() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let id = try await queue(client)
            let sender = ScriptedSender()
            let dispatcher = SMSDispatcher(client: client, settings: settings(), sender: sender, logger: logger)
            #expect(try await dispatcher.round(sender) == 1)
            #expect(sender.sent == [SMSMessage(id: id, scope: scope, to: "+15555550100", body: "Your code is 123456")])
            let row = try await row(client, id)
            #expect(row.delivered && !row.failed && row.body == nil && row.attempts == 1 && row.lastError == nil)
            // Nothing is due any more.
            #expect(try await dispatcher.round(sender) == 0)
            #expect(sender.sent.count == 1)
        }
    }

    @Test("a retryable failure keeps the message for a retry after the backoff, with no body in last_error")
    func retried() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let id = try await queue(client)
            let sender = ScriptedSender { message in
                throw SMSDeliveryError.retryable("gateway said no to \(message.to): \(message.body)")
            }
            let dispatcher = SMSDispatcher(
                client: client, settings: settings(retryBase: .seconds(7)), sender: sender, logger: logger)
            #expect(try await dispatcher.round(sender) == 1)
            var row = try await row(client, id)
            #expect(!row.delivered && !row.failed && row.body == "Your code is 123456" && row.attempts == 1)
            #expect((6...7).contains(row.retryInSeconds))
            let lastError = try #require(row.lastError)
            #expect(!lastError.contains("123456") && !lastError.contains("+15555550100"))
            #expect(lastError.contains("[body]") && lastError.contains("0100"))
            // Not due before its time; the second attempt waits twice as long.
            #expect(try await dispatcher.round(sender) == 0)
            try await client.query("UPDATE sms_outbox SET next_attempt_at = now() WHERE id = \(id)", logger: logger)
            #expect(try await dispatcher.round(sender) == 1)
            row = try await self.row(client, id)
            #expect(row.attempts == 2 && (13...14).contains(row.retryInSeconds) && !row.failed)
        }
    }

    @Test("a permanent failure gives the message up at once and clears its body")
    func permanent() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let id = try await queue(client)
            let sender = ScriptedSender { _ in throw SMSDeliveryError.permanent("number refused") }
            let dispatcher = SMSDispatcher(client: client, settings: settings(), sender: sender, logger: logger)
            #expect(try await dispatcher.round(sender) == 1)
            let row = try await row(client, id)
            #expect(row.failed && !row.delivered && row.body == nil && row.lastError == "number refused")
            #expect(try await dispatcher.round(sender) == 0)
        }
    }

    @Test("after the last attempt allowed a message is given up")
    func attemptsExhausted() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let id = try await queue(client)
            let sender = ScriptedSender { _ in throw SMSDeliveryError.retryable("busy") }
            let dispatcher = SMSDispatcher(
                client: client, settings: settings(retryBase: .milliseconds(1), maxAttempts: 2), sender: sender,
                logger: logger)
            #expect(try await dispatcher.round(sender) == 1)
            try await client.query("UPDATE sms_outbox SET next_attempt_at = now() WHERE id = \(id)", logger: logger)
            #expect(try await dispatcher.round(sender) == 1)
            let row = try await row(client, id)
            #expect(row.failed && row.body == nil && row.attempts == 2)
        }
    }

    @Test("a message whose code expired is given up, never sent late; nor is a retry scheduled past the expiry")
    func expiry() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let expired = try await queue(client, lifetime: -1)
            let sender = ScriptedSender { _ in throw SMSDeliveryError.retryable("busy") }
            let dispatcher = SMSDispatcher(
                client: client, settings: settings(retryBase: .seconds(30)), sender: sender, logger: logger)
            #expect(try await dispatcher.round(sender) == 0)
            #expect(try await dispatcher.expire() == 1)
            var row = try await row(client, expired)
            #expect(row.failed && row.body == nil && row.attempts == 0 && row.lastError == "expired before delivery")
            #expect(sender.sent.isEmpty)
            // A failure whose retry would come after the code's expiry gives up now.
            let soon = try await queue(client, lifetime: 20)
            #expect(try await dispatcher.round(sender) == 1)
            row = try await self.row(client, soon)
            #expect(row.failed && row.body == nil && row.attempts == 1 && row.lastError == "busy")
        }
    }

    @Test("two dispatchers at once never send one message twice")
    func leased() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            var ids: [Int64] = []
            for index in 0..<12 { ids.append(try await queue(client, body: "Your code is \(100_000 + index)")) }
            // A slow sender, so that the second dispatcher claims while the first is still sending.
            let sender = ScriptedSender { _ in try await Task.sleep(for: .milliseconds(200)) }
            var small = settings()
            small.batchSize = 5
            let first = SMSDispatcher(client: client, settings: small, sender: sender, logger: logger)
            let second = SMSDispatcher(client: client, settings: small, sender: sender, logger: logger)
            for _ in 0..<3 {
                async let a = first.round(sender)
                async let b = second.round(sender)
                _ = try await (a, b)
            }
            #expect(sender.sent.map(\.id).sorted() == ids)
            let rows = try await client.query(
                "SELECT count(*) FROM sms_outbox WHERE delivered_at IS NOT NULL AND attempts = 1 AND body IS NULL",
                logger: logger)
            for try await count in rows.decode(Int64.self) { #expect(count == 12) }
        }
    }

    @Test("enqueue refuses a number that is not E.164, and an empty body")
    func enqueueChecks() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            _ = try await queue(client)
            await expectFirebaseError("INVALID_PHONE_NUMBER") {
                _ = try await client.transaction(logger: logger) { connection in
                    try await SMSOutbox.enqueue(
                        connection, scope: scope, to: "5555550100", body: "x", expiresAt: Date(), logger: logger)
                }
            }
            let error = await #expect(throws: FirebaseError.self) {
                _ = try await client.transaction(logger: logger) { connection in
                    try await SMSOutbox.enqueue(
                        connection, scope: scope, to: "+15555550100", body: "", expiresAt: Date(), logger: logger)
                }
            }
            #expect(error?.grpcStatus == "INVALID_ARGUMENT")
        }
    }

    @Test("housekeeping prunes delivered and given-up messages after the mail retention, not waiting ones")
    func pruned() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let waiting = try await queue(client)
            let old = try await queue(client)
            let recent = try await queue(client)
            let oldFailed = try await queue(client)
            try await client.query(
                """
                UPDATE sms_outbox SET body = NULL, delivered_at = now() - interval '8 days' WHERE id = \(old)
                """, logger: logger)
            try await client.query(
                "UPDATE sms_outbox SET body = NULL, delivered_at = now() - interval '1 day' WHERE id = \(recent)",
                logger: logger)
            try await client.query(
                "UPDATE sms_outbox SET body = NULL, failed_at = now() - interval '8 days' WHERE id = \(oldFailed)",
                logger: logger)
            let store = CleanupStore(client: client, anonymousRetention: .zero)
            let granted = try await store.acquire(CleanupLeaseRequest(holder: "w", ttlSeconds: 30), logger: logger)
            let pruned = try await store.housekeeping(
                HousekeepingRequest(
                    lease: granted.lease, ttlSeconds: 30, refreshIdleSeconds: 30 * 86400,
                    sessionRetentionSeconds: 7 * 86400, codeRetentionSeconds: 86400, mailRetentionSeconds: 7 * 86400,
                    batchSize: 10), logger: logger)
            #expect(pruned.mails == 2)
            var left: [Int64] = []
            for try await id in try await client.query("SELECT id FROM sms_outbox ORDER BY id", logger: logger).decode(
                Int64.self)
            {
                left.append(id)
            }
            #expect(left == [waiting, recent])
        }
    }
}
