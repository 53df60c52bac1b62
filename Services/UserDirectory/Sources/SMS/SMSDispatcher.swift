import Foundation
import Logging
import PostgresNIO
import Prometheus
import ServiceLifecycle
import TesseraShared

/// Delivers the SMS outbox (docs/design-notes.md, "SMS delivery"), as `MailDispatcher` delivers mail. Each
/// round gives up what has expired, claims due messages with a lease (replicas never send one message at
/// once; a replica that dies mid-send releases its claim when the lease runs out), sends them at once
/// through the configured sender, and marks each delivered or schedules a retry with exponential backoff.
/// A message whose code has expired, that failed permanently or `maxAttempts` times, or whose next attempt
/// would come after its expiry is given up: marked failed, logged and counted, never sent late. Its body
/// (the code) is cleared once it is delivered or given up. Without a sender, messages wait, and expire.
public struct SMSDispatcher: Service {
    public struct Settings: Sendable {
        public var sender: SMSSenderChoice?
        public var pollInterval: Duration = .seconds(1)
        /// Codes live minutes, not days: retries come quickly, and stop at the code's expiry.
        public var retryBase: Duration = .seconds(5)
        public var retryMax: Duration = .seconds(60)
        public var maxAttempts = 10
        /// One send's whole time (the HTTP request, connection included).
        public var timeout: Duration = .seconds(10)
        public var batchSize = 10
        /// A batch's messages are sent at once, so a claim outlives one send with a margin: no other
        /// replica claims a message that is still being sent.
        public var lease: Duration { timeout + .seconds(30) }

        public init(sender: SMSSenderChoice?) { self.sender = sender }
    }

    let client: Database
    let settings: Settings
    let sender: (any SMSSender)?
    let logger: Logger
    let sent: Counter?
    let retried: Counter?
    let givenUp: Counter?

    /// `sender` nil: nothing is sent (messages wait, and are given up as they expire).
    public init(
        client: Database, settings: Settings, sender: (any SMSSender)?, logger: Logger, metrics: ServiceMetrics? = nil
    ) {
        self.client = client
        self.settings = settings
        self.sender = sender
        self.logger = logger
        let help = "SMS outbox deliveries by outcome: sent, retry (a failed attempt, tried again later), given_up."
        sent = metrics?.counter("sms_deliveries", labels: [("outcome", "sent")], help: help)
        retried = metrics?.counter("sms_deliveries", labels: [("outcome", "retry")], help: help)
        givenUp = metrics?.counter("sms_deliveries", labels: [("outcome", "given_up")], help: help)
        if let metrics { Self.observeOutbox(client: client, metrics: metrics, logger: logger) }
    }

    /// The outbox's depth and the age of its oldest waiting message, read at each scrape (one query over
    /// the due index, across tenants: an operator's figure).
    static func observeOutbox(client: Database, metrics: ServiceMetrics, logger: Logger) {
        let pending = metrics.gauge(
            "sms_outbox_pending", unit: "",
            help: "Text messages waiting in the SMS outbox to be sent (retries included).")
        let oldest = metrics.gauge(
            "sms_outbox_oldest_age", unit: "seconds",
            help: "Age of the oldest text message waiting in the SMS outbox (0: none).")
        metrics.onScrape {
            do {
                let rows = try await client.query(
                    """
                    SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 FROM sms_outbox
                    WHERE delivered_at IS NULL AND failed_at IS NULL
                    """, logger: logger)
                for try await (count, age) in rows.decode((Int64, Double).self) {
                    pending.set(Double(count))
                    oldest.set(age)
                }
            } catch {
                logger.debug("sms outbox figures unavailable", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    var claimed = 0
                    do {
                        try await expire()
                        if let sender { claimed = try await round(sender) }
                    } catch {
                        logger.warning("sms round failed", metadata: ["error": "\(String(reflecting: error))"])
                    }
                    // A full batch means more may be due: go again at once.
                    if claimed < settings.batchSize { try await Task.sleep(for: settings.pollInterval) }
                }
            }
        } catch is CancellationError {
            return
        }
    }

    struct Claimed: Sendable {
        var message: SMSMessage
        var attempts: Int
    }

    /// Gives up every waiting message whose code has expired (not one being sent: its claim decides).
    /// Returns how many.
    @discardableResult
    func expire() async throws -> Int {
        let rows = try await client.query(
            """
            UPDATE sms_outbox SET failed_at = now(), body = NULL, claimed_until = NULL,
                last_error = 'expired before delivery' || coalesce('; last attempt: ' || last_error, '')
            WHERE id IN (
                SELECT id FROM sms_outbox
                WHERE delivered_at IS NULL AND failed_at IS NULL AND expires_at <= now()
                    AND (claimed_until IS NULL OR claimed_until < now())
                ORDER BY next_attempt_at, id LIMIT 100
                FOR UPDATE SKIP LOCKED)
            RETURNING id, tenant_id, attempts
            """, logger: logger)
        var count = 0
        for try await (id, scope, attempts) in rows.decode((Int64, Scope, Int).self) {
            count += 1
            givenUp?.increment()
            logger.error(
                "sms given up",
                metadata: [
                    "sms.id": "\(id)", "tenant.id": .string(scope.key), "sms.attempts": "\(attempts)",
                    "sms.reason": "expired",
                ])
        }
        return count
    }

    /// One round: claim, send (the batch at once), record. Returns how many messages were claimed.
    func round(_ sender: any SMSSender) async throws -> Int {
        let rows = try await client.query(
            """
            UPDATE sms_outbox SET claimed_until = now() + make_interval(secs => \(settings.lease.timeInterval)),
                attempts = attempts + 1
            WHERE id IN (
                SELECT id FROM sms_outbox
                WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now() AND expires_at > now()
                    AND (claimed_until IS NULL OR claimed_until < now())
                ORDER BY next_attempt_at, id LIMIT \(settings.batchSize)
                FOR UPDATE SKIP LOCKED)
            RETURNING id, tenant_id, to_number, coalesce(body, ''), attempts
            """, logger: logger)
        var claimed: [Claimed] = []
        for try await (id, scope, to, body, attempts) in rows.decode((Int64, Scope, String, String, Int).self) {
            claimed.append(Claimed(message: SMSMessage(id: id, scope: scope, to: to, body: body), attempts: attempts))
        }
        await withTaskGroup(of: Void.self) { group in
            for message in claimed {
                group.addTask { await deliver(message, through: sender) }
            }
        }
        return claimed.count
    }

    /// Sends one claimed message and records the outcome. A failure to record leaves the claim to run
    /// out: the message is then tried again (a delivered one sent twice, which the `id` lets a webhook
    /// receiver notice).
    func deliver(_ claimed: Claimed, through sender: any SMSSender) async {
        let message = claimed.message
        do {
            do {
                // A sender that does not bound its own time is bounded here, inside the lease.
                try await withDeadline(settings.timeout + .seconds(5)) { try await sender.send(message) }
            } catch {
                try await recordFailure(
                    claimed, error: error is DeadlineExceeded ? SMSDeliveryError.retryable("timeout") : error)
                return
            }
            _ = try await client.query(
                """
                UPDATE sms_outbox SET delivered_at = now(), body = NULL, claimed_until = NULL, last_error = NULL
                WHERE id = \(message.id)
                """, logger: logger)
            sent?.increment()
            logger.debug(
                "sms sent",
                metadata: [
                    "sms.id": "\(message.id)", "tenant.id": .string(message.scope.key),
                    "sms.to": .string(SMSRedaction.mask(message.to)), "sms.attempts": "\(claimed.attempts)",
                ])
        } catch {
            logger.warning(
                "sms outcome not recorded; the claim will run out and the message be tried again",
                metadata: ["sms.id": "\(message.id)", "error": "\(String(reflecting: error))"])
        }
    }

    /// A failed attempt: given up when the error is permanent, after `maxAttempts`, or when the next
    /// attempt would come at or after the code's expiry; otherwise tried again after
    /// `retryBase × 2^(attempts − 1)`, at most `retryMax`.
    func recordFailure(_ claimed: Claimed, error: any Error) async throws {
        let message = claimed.message
        let detail = SMSRedaction.scrub(String(describing: error), of: message)
        let permanent = (error as? SMSDeliveryError)?.permanent == true
        let exhausted = claimed.attempts >= settings.maxAttempts
        let delay = min(
            settings.retryBase.timeInterval * pow(2, Double(max(0, claimed.attempts - 1))),
            settings.retryMax.timeInterval)
        let giveUp = permanent || exhausted
        let rows = try await client.query(
            """
            WITH decided AS (
                SELECT id, \(giveUp) OR now() + make_interval(secs => \(delay)) >= expires_at AS give_up
                FROM sms_outbox WHERE id = \(message.id)
            )
            UPDATE sms_outbox o SET claimed_until = NULL, last_error = \(detail),
                failed_at = CASE WHEN d.give_up THEN now() END,
                body = CASE WHEN d.give_up THEN NULL ELSE o.body END,
                next_attempt_at = CASE WHEN d.give_up THEN o.next_attempt_at
                    ELSE now() + make_interval(secs => \(delay)) END
            FROM decided d WHERE o.id = d.id
            RETURNING d.give_up
            """, logger: logger)
        var gaveUp = true
        for try await value in rows.decode(Bool.self) { gaveUp = value }
        var metadata: Logger.Metadata = [
            "sms.id": "\(message.id)", "tenant.id": .string(message.scope.key),
            "sms.to": .string(SMSRedaction.mask(message.to)), "sms.attempts": "\(claimed.attempts)",
            "error": .string(detail),
        ]
        if gaveUp {
            givenUp?.increment()
            metadata["sms.reason"] = .string(permanent ? "permanent" : exhausted ? "attempts" : "expires")
            logger.error("sms given up", metadata: metadata)
        } else {
            retried?.increment()
            metadata["retry.seconds"] = "\(delay)"
            logger.warning("sms delivery failed; will retry", metadata: metadata)
        }
    }
}
