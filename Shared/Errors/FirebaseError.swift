import Foundation
import HTTPTypes
import Hummingbird

/// The one error type that crosses the HTTP boundary. It renders exactly the Google/Firebase error
/// shape (docs/protocol/README.md#errors): `{"error":{"code":400,"message":"CODE","errors":[{...}]}}`, with `status`
/// present for every class except plain business 400s.
public struct FirebaseError: Error, Sendable, Equatable {
    public var status: HTTPResponse.Status
    /// `CODE` or `CODE : human detail`.
    public var message: String
    /// gRPC-style status string; nil for business 400s.
    public var grpcStatus: String?
    public var reason: String
    public var retryAfterSeconds: Int?

    public init(
        status: HTTPResponse.Status, message: String, grpcStatus: String?, reason: String,
        retryAfterSeconds: Int? = nil
    ) {
        self.status = status
        self.message = message
        self.grpcStatus = grpcStatus
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The machine-readable code: the part of `message` before `" : "`.
    public var code: String {
        if let range = message.range(of: " : ") { return String(message[..<range.lowerBound]) }
        return message
    }

    /// A business/semantic error (HTTP 400, no `status`), e.g. `EMAIL_EXISTS`: the one place an
    /// `ErrorCode` becomes the wire's error.
    public static func invalid(_ code: ErrorCode, _ detail: String? = nil) -> FirebaseError {
        FirebaseError(
            status: .badRequest, message: detail.map { "\(code.rawValue) : \($0)" } ?? code.rawValue,
            grpcStatus: nil, reason: "invalid")
    }

    /// The business code of this error, when it is one of Tessera's.
    public var errorCode: ErrorCode? { status == .badRequest && grpcStatus == nil ? ErrorCode(rawValue: code) : nil }

    /// A rate limit was reached (issue #7): a business error, with `Retry-After`.
    public static func tooManyAttempts(retryAfterSeconds: Int) -> FirebaseError {
        FirebaseError(
            status: .badRequest, message: ErrorCode.tooManyAttemptsTryLater.rawValue, grpcStatus: nil,
            reason: "invalid",
            retryAfterSeconds: retryAfterSeconds)
    }

    public static func invalidJSON(_ detail: String = "") -> FirebaseError {
        FirebaseError(
            status: .badRequest,
            message: "Invalid JSON payload received. \(detail)".trimmingCharacters(in: .whitespaces),
            grpcStatus: "INVALID_ARGUMENT", reason: "parseError")
    }

    public static func invalidArgument(_ message: String) -> FirebaseError {
        FirebaseError(status: .badRequest, message: message, grpcStatus: "INVALID_ARGUMENT", reason: "invalid")
    }

    public static let missingAPIKey = FirebaseError(
        status: .forbidden, message: "The request is missing a valid API key.", grpcStatus: "PERMISSION_DENIED",
        reason: "forbidden")

    public static let invalidAPIKey = FirebaseError(
        status: .badRequest, message: "API key not valid. Please pass a valid API key.",
        grpcStatus: "INVALID_ARGUMENT", reason: "badRequest")

    public static let invalidCredentials = FirebaseError(
        status: .unauthorized, message: "Invalid Credentials", grpcStatus: "UNAUTHENTICATED", reason: "authError")

    public static let missingCredentials = FirebaseError(
        status: .unauthorized,
        message:
            "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
        grpcStatus: "UNAUTHENTICATED", reason: "required")

    public static func permissionDenied(_ message: String) -> FirebaseError {
        FirebaseError(status: .forbidden, message: message, grpcStatus: "PERMISSION_DENIED", reason: "forbidden")
    }

    public static let notFound = FirebaseError(
        status: .notFound, message: "Not Found", grpcStatus: "NOT_FOUND", reason: "notFound")

    public static let methodNotAllowed = FirebaseError(
        status: .methodNotAllowed, message: "Method Not Allowed", grpcStatus: "INVALID_ARGUMENT", reason: "badRequest")

    public static func notImplemented(_ what: String) -> FirebaseError {
        FirebaseError(
            status: .notImplemented, message: "NOT_IMPLEMENTED : \(what) is not implemented in Tessera.",
            grpcStatus: "NOT_IMPLEMENTED", reason: "unimplemented")
    }

    /// A dependency is down: clients should retry.
    public static func unavailable(_ detail: String, retryAfterSeconds: Int = 1) -> FirebaseError {
        FirebaseError(
            status: .serviceUnavailable, message: "UNAVAILABLE : \(detail)", grpcStatus: "UNAVAILABLE",
            reason: "backendError", retryAfterSeconds: retryAfterSeconds)
    }

    public static let `internal` = FirebaseError(
        status: .internalServerError, message: "INTERNAL : An internal error occurred.", grpcStatus: "INTERNAL",
        reason: "backendError")

    public static let payloadTooLarge = FirebaseError(
        status: .contentTooLarge, message: "Request payload is too large.", grpcStatus: "INVALID_ARGUMENT",
        reason: "badRequest")
}

extension FirebaseError: CustomStringConvertible {
    public var description: String { "FirebaseError(\(status.code) \(message))" }
}

/// Wire form of the error, shared by the renderer and by the internal client that reads it back.
public struct FirebaseErrorBody: Codable, Sendable {
    public struct Detail: Codable, Sendable {
        public var message: String
        public var reason: String
        public var domain: String
    }
    public struct Inner: Codable, Sendable {
        public var code: Int
        public var message: String
        public var status: String?
        public var errors: [Detail]
    }
    public var error: Inner

    public init(_ error: FirebaseError) {
        self.error = Inner(
            code: error.status.code, message: error.message, status: error.grpcStatus,
            errors: [Detail(message: error.message, reason: error.reason, domain: "global")])
    }

    public var firebaseError: FirebaseError {
        FirebaseError(
            status: HTTPResponse.Status(code: error.code), message: error.message, grpcStatus: error.status,
            reason: error.errors.first?.reason ?? "invalid")
    }
}

extension FirebaseError: HTTPResponseError {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=UTF-8"]
        if let retryAfterSeconds { headers[.retryAfter] = String(retryAfterSeconds) }
        let data = try JSONEncoder().encode(FirebaseErrorBody(self))
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
