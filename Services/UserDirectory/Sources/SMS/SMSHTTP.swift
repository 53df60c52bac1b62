import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import TesseraShared

/// The HTTP side of the webhook and Twilio senders: one client for both (no redirects followed, no
/// decompression), and one POST with a whole-request timeout.
enum SMSHTTP {
    /// The client the HTTP senders share; `HTTPClientService` shuts it down with the directory.
    static func makeClient(connectTimeout: Duration = .seconds(5)) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        // A redirect would send the body (the code) somewhere the operator did not name.
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .milliseconds(Int64(connectTimeout.timeInterval * 1000)), read: nil)
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    struct Answer {
        var status: Int
        var body: Data
    }

    /// POSTs `body` to `url`. A failure to reach the server or a timeout is a retryable
    /// `SMSDeliveryError` naming the error's type only (its text could name the URL, and a URL can
    /// carry a credential).
    static func post(
        _ url: String, headers: [(String, String)], body: Data, client: HTTPClient, timeout: Duration,
        what: String
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.body = .bytes(ByteBuffer(bytes: body))
        request.headers.add(name: "User-Agent", value: "Tessera")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        do {
            let response = try await client.execute(
                request, timeout: .milliseconds(Int64(timeout.timeInterval * 1000)))
            let answer = try await response.body.collect(upTo: 64 * 1024)
            return Answer(status: Int(response.status.code), body: Data(answer.readableBytesView))
        } catch {
            throw SMSDeliveryError.retryable("\(what) unreachable: \(Self.kind(of: error))")
        }
    }

    /// AsyncHTTPClient's short description (`Read timeout`, `Deadline exceeded`, …), or the error's type.
    static func kind(of error: any Error) -> String {
        if let error = error as? HTTPClientError { return error.shortDescription }
        return String(describing: type(of: error))
    }

    /// Retryable statuses of an answer that is not a success: 408 and 429, and everything but 4xx.
    static func isRetryable(status: Int) -> Bool {
        status == 408 || status == 429 || !(400...499).contains(status)
    }
}
