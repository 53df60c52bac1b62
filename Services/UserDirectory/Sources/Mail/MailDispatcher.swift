import Foundation
import Logging
import PostgresNIO
import Prometheus
import ServiceLifecycle
import TesseraShared

/// Delivers the durable outbox (docs/protocol/accounts.md#email-delivery). Each round claims due messages
/// with a lease (several directory replicas never send one message at once; a replica that dies mid-send
/// releases its claim when the lease runs out), sends them, and marks each delivered, or schedules a retry
/// with exponential backoff. A message is never dropped silently: after `giveUpAfter` it is marked failed and
/// logged, and stays in the outbox for an operator.
public struct MailDispatcher: Service {
    public struct Settings: Sendable {
        public var smtp: SMTPConfiguration?
        public var pollInterval: Duration = .seconds(1)
        public var retryBase: Duration = .seconds(30)
        public var retryMax: Duration = .seconds(3600)
        public var giveUpAfter: Duration = .seconds(3 * 86400)
        public var batchSize = 10
        /// Longer than a whole batch can take (each message has a 30 s SMTP timeout), so no other
        /// replica claims a message that is still being sent.
        public var lease: Duration = .seconds(10 * 30 + 60)

        public init(smtp: SMTPConfiguration?) { self.smtp = smtp }
    }

    let client: Database
    let settings: Settings
    let logger: Logger
    let sent: Counter?
    let retried: Counter?
    let givenUp: Counter?

    public init(client: Database, settings: Settings, logger: Logger, metrics: ServiceMetrics? = nil) {
        self.client = client
        self.settings = settings
        self.logger = logger
        let help = "Outbox deliveries by outcome: sent, retry (a failed attempt, tried again later), given_up."
        sent = metrics?.counter("mail_deliveries", labels: [("outcome", "sent")], help: help)
        retried = metrics?.counter("mail_deliveries", labels: [("outcome", "retry")], help: help)
        givenUp = metrics?.counter("mail_deliveries", labels: [("outcome", "given_up")], help: help)
        if let metrics { Self.observeOutbox(client: client, metrics: metrics, logger: logger) }
    }

    /// The outbox's depth and the age of its oldest waiting mail, read at each scrape (one query
    /// over the due index, across tenants: an operator's figure). A scrape while PostgreSQL is
    /// unreachable leaves the last figures.
    static func observeOutbox(client: Database, metrics: ServiceMetrics, logger: Logger) {
        let pending = metrics.gauge(
            "mail_outbox_pending", unit: "", help: "Mails waiting in the outbox to be sent (retries included).")
        let oldest = metrics.gauge(
            "mail_outbox_oldest_age", unit: "seconds", help: "Age of the oldest mail waiting in the outbox (0: none).")
        metrics.onScrape {
            do {
                let rows = try await client.query(
                    """
                    SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 FROM mail_outbox
                    WHERE delivered_at IS NULL AND failed_at IS NULL
                    """, logger: logger)
                for try await (count, age) in rows.decode((Int64, Double).self) {
                    pending.set(Double(count))
                    oldest.set(age)
                }
            } catch {
                logger.debug("outbox figures unavailable", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    public func run() async throws {
        guard let smtp = settings.smtp else {
            logger.warning("SMTP_URL is not set: mail stays queued in the outbox until it is")
            try? await gracefulShutdown()
            return
        }
        let sender = SMTPClient(configuration: smtp)
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    var sent = 0
                    do {
                        sent = try await round(sender)
                    } catch {
                        logger.warning("mail round failed", metadata: ["error": "\(String(reflecting: error))"])
                    }
                    // A full batch means more may be due: go again at once.
                    if sent < settings.batchSize { try await Task.sleep(for: settings.pollInterval) }
                }
            }
        } catch is CancellationError {
            return
        }
    }

    struct Claimed {
        var id: Int64
        var recipient: String
        var subject: String
        var body: String
        var attempts: Int
        var ageSeconds: Double
    }

    /// One round: claim, send, record. Returns how many messages were claimed.
    func round(_ sender: SMTPClient) async throws -> Int {
        let rows = try await client.query(
            """
            UPDATE mail_outbox SET claimed_until = now() + make_interval(secs => \(settings.lease.timeInterval)),
                attempts = attempts + 1
            WHERE id IN (
                SELECT id FROM mail_outbox
                WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
                    AND (claimed_until IS NULL OR claimed_until < now())
                ORDER BY next_attempt_at, id LIMIT \(settings.batchSize)
                FOR UPDATE SKIP LOCKED)
            RETURNING id, recipient, subject, coalesce(body, ''), attempts,
                extract(epoch FROM now() - created_at)::float8
            """, logger: logger)
        var claimed: [Claimed] = []
        for try await (id, recipient, subject, body, attempts, age) in rows.decode(
            (Int64, String, String, String, Int, Double).self)
        {
            claimed.append(
                Claimed(id: id, recipient: recipient, subject: subject, body: body, attempts: attempts, ageSeconds: age)
            )
        }
        for message in claimed {
            do {
                try await sender.send(
                    MailMessage(to: message.recipient, subject: message.subject, body: message.body), logger: logger)
                try await client.query(
                    """
                    UPDATE mail_outbox SET delivered_at = now(), body = NULL, claimed_until = NULL, last_error = NULL
                    WHERE id = \(message.id)
                    """, logger: logger)
                sent?.increment()
            } catch {
                try await recordFailure(message, error: error)
            }
        }
        return claimed.count
    }

    func recordFailure(_ message: Claimed, error: any Error) async throws {
        let description = String(String(describing: error).prefix(500))
        let permanent = (error as? SMTPError)?.isPermanent == true
        if permanent || message.ageSeconds > settings.giveUpAfter.timeInterval {
            try await client.query(
                """
                UPDATE mail_outbox SET failed_at = now(), claimed_until = NULL, last_error = \(description)
                WHERE id = \(message.id)
                """, logger: logger)
            givenUp?.increment()
            logger.error(
                "mail given up",
                metadata: [
                    "mail.id": "\(message.id)", "mail.attempts": "\(message.attempts)",
                    "error": .string(description),
                ])
            return
        }
        retried?.increment()
        let delay = min(
            settings.retryBase.timeInterval * pow(2, Double(max(0, message.attempts - 1))),
            settings.retryMax.timeInterval)
        try await client.query(
            """
            UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => \(delay)), claimed_until = NULL,
                last_error = \(description)
            WHERE id = \(message.id)
            """, logger: logger)
        logger.warning(
            "mail delivery failed; will retry",
            metadata: [
                "mail.id": "\(message.id)", "mail.attempts": "\(message.attempts)",
                "retry.seconds": "\(delay)", "error": .string(description),
            ])
    }
}
