import AsyncHTTPClient
import Foundation
import Logging
import TesseraShared

/// Which sender delivers the outbox (`TESSERA_SMS_SENDER`; docs/configuration.md).
public enum SMSSenderChoice: Sendable {
    case webhook(WebhookSMSSender.Configuration)
    case twilio(TwilioSMSSender.Configuration)
    /// Development only: the codes end up in the file.
    case file(path: String)

    public var name: String {
        switch self {
        case .webhook: "webhook"
        case .twilio: "twilio"
        case .file: "file"
        }
    }
}

extension SMSDispatcher.Settings {
    /// Reads the `TESSERA_SMS_*` settings (docs/configuration.md). A sender whose settings are missing or
    /// malformed stops the directory at start with a `ConfigError` naming the setting.
    public init(environment env: ConfigReader) throws {
        self.init(sender: try Self.sender(env))
        retryBase = try env.duration("TESSERA_SMS_RETRY_BASE", default: retryBase)
        retryMax = try env.duration("TESSERA_SMS_RETRY_MAX", default: retryMax)
        pollInterval = try env.duration("TESSERA_SMS_POLL_INTERVAL", default: pollInterval)
        timeout = try env.duration("TESSERA_SMS_TIMEOUT", default: timeout)
        maxAttempts = try env.int("TESSERA_SMS_MAX_ATTEMPTS", default: maxAttempts)
        guard maxAttempts >= 1 else { throw ConfigError.invalid("TESSERA_SMS_MAX_ATTEMPTS", "expected 1 or more") }
        guard timeout > .zero else { throw ConfigError.invalid("TESSERA_SMS_TIMEOUT", "expected more than 0s") }
        guard pollInterval > .zero else {
            throw ConfigError.invalid("TESSERA_SMS_POLL_INTERVAL", "expected more than 0s")
        }
    }

    static func sender(_ env: ConfigReader) throws -> SMSSenderChoice? {
        switch env.string("TESSERA_SMS_SENDER") {
        case nil:
            return nil
        case "webhook":
            let url = try env.required("TESSERA_SMS_WEBHOOK_URL")
            guard isHTTPURL(url) else {
                throw ConfigError.invalid("TESSERA_SMS_WEBHOOK_URL", "expected an http(s) URL")
            }
            return .webhook(.init(url: url, secret: try env.secret("TESSERA_SMS_WEBHOOK_SECRET")))
        case "twilio":
            let sid = try env.required("TESSERA_SMS_TWILIO_ACCOUNT_SID")
            guard sid.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw ConfigError.invalid("TESSERA_SMS_TWILIO_ACCOUNT_SID", "expected letters and digits (AC…)")
            }
            guard let token = try env.secretText("TESSERA_SMS_TWILIO_AUTH_TOKEN"), !token.isEmpty else {
                throw ConfigError.missing("TESSERA_SMS_TWILIO_AUTH_TOKEN")
            }
            let origin: TwilioSMSSender.Configuration.Origin
            switch (env.string("TESSERA_SMS_TWILIO_FROM"), env.string("TESSERA_SMS_TWILIO_MESSAGING_SERVICE_SID")) {
            case (let from?, nil): origin = .from(from)
            case (nil, let service?): origin = .messagingService(service)
            case (.some, .some):
                throw ConfigError.invalid(
                    "TESSERA_SMS_TWILIO_FROM",
                    "set either TESSERA_SMS_TWILIO_FROM or TESSERA_SMS_TWILIO_MESSAGING_SERVICE_SID, not both")
            case (nil, nil):
                throw ConfigError.missing("TESSERA_SMS_TWILIO_FROM (or TESSERA_SMS_TWILIO_MESSAGING_SERVICE_SID)")
            }
            let base = env.string("TESSERA_SMS_TWILIO_BASE_URL", default: TwilioSMSSender.Configuration.defaultBaseURL)
            guard isHTTPURL(base) else {
                throw ConfigError.invalid("TESSERA_SMS_TWILIO_BASE_URL", "expected an http(s) URL")
            }
            return .twilio(.init(accountSID: sid, authToken: token, origin: origin, baseURL: base))
        case "file":
            return .file(path: try env.required("TESSERA_SMS_FILE"))
        default:
            throw ConfigError.invalid("TESSERA_SMS_SENDER", "expected webhook, twilio or file")
        }
    }

    static func isHTTPURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty
        else { return false }
        return scheme == "https" || scheme == "http"
    }

    /// The configured sender and, for the HTTP ones, the client it uses (the caller runs it as an
    /// `HTTPClientService`). Logs which sender delivers, or a notice that none does; a file that cannot
    /// be written stops the start.
    public func makeSender(logger: Logger) throws -> (sender: (any SMSSender)?, http: HTTPClient?) {
        guard let choice = sender else {
            logger.notice(
                "TESSERA_SMS_SENDER is not set: text messages wait in the SMS outbox until their codes expire")
            return (nil, nil)
        }
        switch choice {
        case .webhook(let webhook):
            if let url = URL(string: webhook.url), url.scheme?.lowercased() == "http",
                !["localhost", "127.0.0.1", "::1"].contains(url.host ?? "")
            {
                logger.warning(
                    "TESSERA_SMS_WEBHOOK_URL is plain http to another host: one-time codes cross the network in clear")
            }
            let client = SMSHTTP.makeClient()
            logger.info("SMS sender", metadata: ["sms.sender": "webhook", "sms.host": .string(Self.host(webhook.url))])
            return (WebhookSMSSender(configuration: webhook, client: client, timeout: timeout), client)
        case .twilio(let twilio):
            let client = SMSHTTP.makeClient()
            logger.info(
                "SMS sender", metadata: ["sms.sender": "twilio", "sms.host": .string(Self.host(twilio.baseURL))])
            return (TwilioSMSSender(configuration: twilio, client: client, timeout: timeout), client)
        case .file(let path):
            let sender = FileSMSSender(path: path)
            do {
                try sender.check()
            } catch {
                throw ConfigError.invalid("TESSERA_SMS_FILE", "the file cannot be opened for appending")
            }
            logger.warning(
                "TESSERA_SMS_SENDER=file: one-time codes are written to a file, for development only",
                metadata: ["sms.file": .string(path)])
            return (sender, nil)
        }
    }

    static func host(_ url: String) -> String { URL(string: url)?.host ?? "?" }
}
