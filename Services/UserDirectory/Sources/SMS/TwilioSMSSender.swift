import AsyncHTTPClient
import Foundation
import TesseraShared

/// Delivers through Twilio's Messages API, or any provider's copy of it (`TESSERA_SMS_SENDER=twilio`;
/// docs/design-notes.md, "SMS delivery"): `POST {base}/2010-04-01/Accounts/{sid}/Messages.json`, HTTP Basic
/// authentication with the account SID and auth token, form fields `To`, `Body` and `From` or
/// `MessagingServiceSid`. A 2xx answer (Twilio's is 201) is delivered; 429 and 5xx are tried again; any
/// other 4xx is permanent, logged with Twilio's `code` and `message` (numbers masked).
public struct TwilioSMSSender: SMSSender {
    public struct Configuration: Sendable {
        /// Who the message is from: a number (or alphanumeric sender id) or a messaging service.
        public enum Origin: Sendable, Equatable {
            case from(String)
            case messagingService(String)
        }

        public static let defaultBaseURL = "https://api.twilio.com"

        public var accountSID: String
        public var authToken: String
        public var origin: Origin
        /// Without a trailing `/`.
        public var baseURL: String

        public init(accountSID: String, authToken: String, origin: Origin, baseURL: String = defaultBaseURL) {
            self.accountSID = accountSID
            self.authToken = authToken
            self.origin = origin
            self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        }
    }

    let configuration: Configuration
    let client: HTTPClient
    let timeout: Duration

    public init(configuration: Configuration, client: HTTPClient, timeout: Duration) {
        self.configuration = configuration
        self.client = client
        self.timeout = timeout
    }

    struct Request {
        var url: String
        var headers: [String: String]
        var form: [(String, String)]
    }

    /// The request for `message` (the account SID is checked to be letters and digits at start, so
    /// it is safe in the path).
    func request(for message: SMSMessage) -> Request {
        let credentials = Data("\(configuration.accountSID):\(configuration.authToken)".utf8).base64EncodedString()
        var form = [("To", message.to), ("Body", message.body)]
        switch configuration.origin {
        case .from(let from): form.append(("From", from))
        case .messagingService(let sid): form.append(("MessagingServiceSid", sid))
        }
        return Request(
            url: "\(configuration.baseURL)/2010-04-01/Accounts/\(configuration.accountSID)/Messages.json",
            headers: [
                "Authorization": "Basic \(credentials)", "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            ],
            form: form)
    }

    struct ErrorAnswer: Decodable {
        var code: Int?
        var message: String?
    }

    public func send(_ message: SMSMessage) async throws {
        let request = request(for: message)
        let answer = try await SMSHTTP.post(
            request.url, headers: request.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
            body: Data(FormURLEncoded.encode(request.form).utf8), client: client, timeout: timeout,
            what: "the Twilio API")
        guard (200...299).contains(answer.status) else {
            var detail = "the Twilio API answered \(answer.status)"
            if let error = try? JSONDecoder().decode(ErrorAnswer.self, from: answer.body) {
                if let code = error.code { detail += ", code \(code)" }
                if let text = error.message { detail += ": " + text.prefix(300) }
            }
            throw SMSHTTP.isRetryable(status: answer.status)
                ? SMSDeliveryError.retryable(detail) : SMSDeliveryError.permanent(detail)
        }
    }
}
