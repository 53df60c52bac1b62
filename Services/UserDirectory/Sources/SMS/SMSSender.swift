import Foundation
import TesseraShared

/// One text message as a sender gets it from the outbox (docs/design-notes.md, "SMS delivery").
public struct SMSMessage: Sendable, Equatable {
    /// The outbox row's id: the same for every attempt at one message, so a receiver can drop a repeat.
    public var id: Int64
    public var scope: Scope
    /// E.164 (`+15555550100`).
    public var to: String
    /// The text; it carries a one-time code, so it is never logged nor kept in an error.
    public var body: String

    public init(id: Int64, scope: Scope, to: String, body: String) {
        self.id = id
        self.scope = scope
        self.to = to
        self.body = body
    }
}

/// Hands a message to whatever delivers it: an operator's webhook, a Twilio-compatible API, or (for
/// development) a file. A sender throws `SMSDeliveryError` to say whether trying again can help; any
/// other error counts as retryable.
public protocol SMSSender: Sendable {
    func send(_ message: SMSMessage) async throws
}

/// Why a message was not delivered. `detail` is for the log and the outbox's `last_error`: senders
/// build it without the body, and the dispatcher masks the number in it (`SMSRedaction`).
public struct SMSDeliveryError: Error, CustomStringConvertible, Sendable {
    /// Permanent: the same message will never go through (a refused number, bad credentials); the
    /// message is given up at once. Otherwise it is tried again after a backoff.
    public var permanent: Bool
    public var detail: String

    public static func permanent(_ detail: String) -> Self { Self(permanent: true, detail: detail) }
    public static func retryable(_ detail: String) -> Self { Self(permanent: false, detail: detail) }

    public var description: String { detail }
}

/// What keeps one-time codes and full numbers out of logs and `last_error`.
public enum SMSRedaction {
    /// `+15555550100` → `+*******0100` (all but the last four digits masked), as a sign-in challenge shows it.
    public static func mask(_ number: String) -> String { MultiFactorEnrollment.mask(number) }

    /// `text` (an error's description, a provider's message) without `message`'s body and with every
    /// phone number in it masked: providers echo the number in their errors ("The 'To' number … is
    /// not valid"). Cut to 500 characters.
    public static func scrub(_ text: String, of message: SMSMessage) -> String {
        var text = text
        if !message.body.isEmpty { text = text.replacingOccurrences(of: message.body, with: "[body]") }
        text = maskNumbers(in: text)
        return String(text.prefix(500))
    }

    /// Runs of seven or more digits (a `+` before them kept) masked but for their last four: phone
    /// numbers, E.164 or not; shorter runs (status and error codes such as Twilio's 21211) stay.
    static func maskNumbers(in text: String) -> String {
        var out = ""
        var run = ""
        func flush() {
            out += run.count >= 7 ? String(repeating: "*", count: run.count - 4) + run.suffix(4) : run
            run = ""
        }
        for character in text {
            if character.isASCII, character.isNumber {
                run.append(character)
            } else {
                flush()
                out.append(character)
            }
        }
        flush()
        return out
    }
}
