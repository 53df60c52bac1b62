import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// The durable SMS outbox (`sms_outbox`, migration 24; docs/design-notes.md, "SMS delivery"). A message
/// is queued in the caller's transaction, beside the code it carries: a code whose text is not durably
/// queued never exists, and a rolled-back code is never sent. `SMSDispatcher` delivers it.
public enum SMSOutbox {
    /// The longest body accepted: ten concatenated SMS segments (Twilio's limit is 1600 characters).
    public static let maxBodyLength = 1600

    /// Queues `body` for `to` (E.164) in `scope`, inside the caller's transaction on `connection`.
    /// `expiresAt` is when the code in it stops working: a message not delivered by then is given up,
    /// never sent late. Returns the message's id (the webhook's `id`). A number that is not E.164 is
    /// `INVALID_PHONE_NUMBER`; an empty or too long body is `INVALID_ARGUMENT`.
    @discardableResult
    public static func enqueue(
        _ connection: PostgresConnection, scope: Scope, to: String, body: String, expiresAt: Date, logger: Logger
    ) async throws -> Int64 {
        guard Credentials.isPhoneNumber(to) else {
            throw FirebaseError.invalid(.invalidPhoneNumber, "The number is not in E.164 format.")
        }
        guard !body.isEmpty, body.count <= maxBodyLength else {
            throw FirebaseError.invalidArgument("An SMS body has 1 to \(maxBodyLength) characters.")
        }
        let rows = try await connection.query(
            """
            INSERT INTO sms_outbox (tenant_id, to_number, body, expires_at)
            VALUES (\(scope: scope), \(to), \(body), \(expiresAt))
            RETURNING id
            """, logger: logger)
        var id: Int64?
        for try await value in rows.decode(Int64.self) { id = value }
        guard let id else { throw SMSOutboxError.notQueued }
        logger.info(
            "sms queued",
            metadata: [
                "tenant.id": .string(scope.key), "sms.id": "\(id)", "sms.to": .string(SMSRedaction.mask(to)),
            ])
        return id
    }
}

enum SMSOutboxError: Error, CustomStringConvertible {
    case notQueued

    var description: String { "the SMS outbox returned no id for a queued message" }
}
