import AsyncHTTPClient
import Foundation
import HTTPTypes
import Instrumentation
import Logging
import NIOCore
import NIOHTTP1
import ServiceContextModule
import Tracing

/// The internal HTTP client for the user-directory. Every call carries the internal secret and the
/// caller's request id, has a timeout, and fails closed: a directory that cannot be reached becomes
/// a retryable 503 `FirebaseError`; an error the directory answered is passed on as it was.
public struct DirectoryClient: Sendable {
    public let httpClient: HTTPClient
    public let baseURL: String
    let secret: String
    let timeout: TimeAmount
    let metrics: ServiceMetrics?

    public init(
        httpClient: HTTPClient, baseURL: String, secret: String, timeout: Duration = .seconds(5),
        metrics: ServiceMetrics? = nil
    ) {
        self.metrics = metrics
        self.httpClient = httpClient
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.secret = secret
        self.timeout = .milliseconds(Int64(timeout.timeInterval * 1000))
    }

    /// Calls a POST endpoint with `body` (JSON) and decodes its answer.
    public func call<Body: Encodable, Answer: Decodable>(
        _ endpoint: InternalEndpoint<Body, Answer>, _ body: Body, requestID: String, logger: Logger
    ) async throws -> Answer {
        let data = try (body as? any DirectJSONEncodable).map { Data($0.jsonBytes()) } ?? JSONEncoder().encode(body)
        var headers = HTTPHeaders()
        headers.add(name: "X-Tessera-Internal", value: secret)
        headers.add(name: "Content-Type", value: "application/json")
        let (status, bytes, retryAfter) = try await send(
            method: .POST, path: endpoint.path, headers: headers, body: data, requestID: requestID, logger: logger)
        return try decodeAnswer(
            Answer.self, status: status, bytes: bytes, retryAfter: retryAfter, path: endpoint.path, logger: logger)
    }

    /// Calls a GET endpoint and decodes its answer.
    public func get<Answer: Decodable>(
        _ endpoint: InternalEndpoint<NoBody, Answer>, requestID: String, logger: Logger
    ) async throws -> Answer {
        var headers = HTTPHeaders()
        headers.add(name: "X-Tessera-Internal", value: secret)
        let (status, bytes, retryAfter) = try await send(
            method: .GET, path: endpoint.path, headers: headers, body: nil, requestID: requestID, logger: logger)
        return try decodeAnswer(
            Answer.self, status: status, bytes: bytes, retryAfter: retryAfter, path: endpoint.path, logger: logger)
    }

    /// Sends a request body to the directory as it came (POST, or GET with the body's fields in the
    /// query), with the caller's `Authorization`, and returns the directory's status, body and
    /// `Retry-After`. Used for privileged calls that arrive on client paths: the directory
    /// authenticates them, and charges a failed authentication to `clientAddress` (the end user's,
    /// as this service resolved it), which the internal secret beside it makes believable.
    public func forward(
        method: HTTPRequest.Method = .post, pathAndQuery: String, authorization: String?, body: Data?,
        clientAddress: String?, requestID: String, logger: Logger
    ) async throws -> (status: Int, body: Data, retryAfter: Int?) {
        var headers = HTTPHeaders()
        if let authorization { headers.add(name: "Authorization", value: authorization) }
        if let clientAddress {
            headers.add(name: "X-Tessera-Internal", value: secret)
            headers.add(name: HTTPField.Name.relayedClientAddress.rawName, value: clientAddress)
        }
        headers.add(name: "Content-Type", value: "application/json")
        return try await send(
            method: HTTPMethod(rawValue: method.rawValue), path: pathAndQuery, headers: headers, body: body,
            requestID: requestID, logger: logger)
    }

    private func send(
        method: HTTPMethod, path: String, headers: HTTPHeaders, body: Data?, requestID: String, logger: Logger
    ) async throws -> (Int, Data, Int?) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        request.headers = headers
        request.headers.add(name: "X-Request-ID", value: requestID)
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let started = ContinuousClock.now
        // Admin paths forwarded verbatim carry ids: one label for all of them.
        let label = path.hasPrefix("/internal/") ? path : "forwarded-admin-call"
        guard TraceExport.isEnabled else {
            return try await exchange(request, label: label, started: started, logger: logger)
        }
        // A client span, whose context the directory continues (W3C traceparent).
        return try await withSpan("directory \(label)", ofKind: .client) { span in
            span.attributes["http.request.method"] = method.rawValue
            span.attributes["tessera.internal.path"] = label
            var traced = request
            InstrumentationSystem.instrument.inject(
                ServiceContext.current ?? .topLevel, into: &traced.headers, using: InternalHeadersInjector())
            let answer = try await exchange(traced, label: label, started: started, logger: logger)
            span.attributes["http.response.status_code"] = answer.0
            return answer
        }
    }

    private func exchange(
        _ request: HTTPClientRequest, label: String, started: ContinuousClock.Instant, logger: Logger
    ) async throws -> (Int, Data, Int?) {
        do {
            let response = try await httpClient.execute(request, timeout: timeout)
            let buffer = try await response.body.collect(upTo: 16 << 20)
            metrics?.recordInternalCall(
                path: label, outcome: response.status.code < 500 ? "answered" : "server_error",
                duration: ContinuousClock.now - started)
            let retryAfter = response.headers.first(name: "Retry-After").flatMap { Int($0) }
            return (Int(response.status.code), Data(buffer.readableBytesView), retryAfter)
        } catch {
            metrics?.recordInternalCall(path: label, outcome: "unreachable", duration: ContinuousClock.now - started)
            logger.warning(
                "user-directory unreachable",
                metadata: ["internal.path": .string(label), "error": .string(String(describing: error))])
            throw FirebaseError.unavailable("The user directory is unavailable; retry shortly.")
        }
    }

    private func decodeAnswer<Answer: Decodable>(
        _ type: Answer.Type, status: Int, bytes: Data, retryAfter: Int?, path: String, logger: Logger
    ) throws -> Answer {
        if (200..<300).contains(status) {
            do {
                if let direct = Answer.self as? any DirectJSONDecodable.Type {
                    // Succeeds for the answers that conform (the user and the session answers).
                    if let answer = try direct.init(jsonBytes: bytes) as? Answer { return answer }
                }
                return try JSONDecoder().decode(Answer.self, from: bytes)
            } catch {
                logger.error("undecodable internal answer", metadata: ["internal.path": .string(path)])
                throw FirebaseError.internal
            }
        }
        if let body = try? JSONDecoder().decode(FirebaseErrorBody.self, from: bytes) {
            // The directory's Retry-After (rate limits, a full hashing queue) reaches the client too.
            var error = body.firebaseError
            error.retryAfterSeconds = retryAfter
            throw error
        }
        logger.error(
            "unexpected internal answer",
            metadata: ["internal.path": .string(path), "http.status": .stringConvertible(status)])
        throw status == 503 || status == 502
            ? FirebaseError.unavailable("The user directory is unavailable; retry shortly.") : FirebaseError.internal
    }
}

/// Writes trace context (`traceparent`, `tracestate`) into an internal call's headers.
struct InternalHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}
