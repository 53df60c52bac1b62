import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Sets the request id, logs each request once, and turns every error into the Firebase error
/// shape. Unknown errors are logged with the request id and become a generic 500: each one is a bug.
public struct FirebaseErrorMiddleware<Context: TesseraContext>: RouterMiddleware {
    let metrics: ServiceMetrics?

    /// With `metrics`, every answer is counted by route template, status and error code.
    public init(metrics: ServiceMetrics? = nil) {
        self.metrics = metrics
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let started = ContinuousClock.now
        metrics?.requestStarted()
        defer { metrics?.requestEnded() }
        var errorCode: String?
        var context = context
        let incoming = request.headers[.requestID].flatMap { $0.count <= 128 && !$0.isEmpty ? $0 : nil }
        context.requestID = incoming ?? Secrets.randomAlphanumeric(20)
        context.logger[metadataKey: "request.id"] = .string(context.requestID)
        context.logger[metadataKey: "hb.request.id"] = nil
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            let firebaseError = Self.firebaseError(for: error, context: context)
            errorCode = firebaseError.code
            response = try firebaseError.response(from: request, context: context)
        }
        metrics?.recordRequest(
            method: request.method.rawValue, route: context.endpointPath ?? "NotFound",
            status: Int(response.status.code), errorCode: errorCode.map(Self.metricLabel),
            duration: ContinuousClock.now - started)
        response.headers[.requestID] = context.requestID
        let level = Self.logLevel(status: response.status.code)
        context.logger.log(
            level: level, "request",
            metadata: [
                "http.method": .string(request.method.rawValue),
                "http.path": .string(request.uri.path),
                "http.status": .stringConvertible(response.status.code),
            ])
        return response
    }

    /// How an answer is logged: a 500 (or another 5xx) is a fault, at error level. A 503 is not: it is
    /// an answer the service chose, with `Retry-After` (a full hashing queue, a dependency outage),
    /// and a login storm gave thousands a second, one error line each (issue 37). What caused it is
    /// logged once where it is known (PostgreSQL or the directory unavailable, at warning level), and
    /// refusals are counted (`tessera_password_hash_refused_total`, requests by status and code).
    static func logLevel(status: Int) -> Logger.Level {
        status >= 500 && status != 503 ? .error : .debug
    }

    /// An error code as a metric label: codes are upper-case words; anything else (a free-text
    /// message) is folded into one value so labels stay bounded.
    static func metricLabel(_ code: String) -> String {
        code.count <= 64 && code.allSatisfy({ $0.isUppercase || $0 == "_" || $0.isNumber }) ? code : "OTHER"
    }

    static func firebaseError(for error: any Error, context: Context) -> FirebaseError {
        switch error {
        case let error as FirebaseError:
            return error
        case let error as HTTPError:
            switch error.status {
            case .notFound: return .notFound
            case .methodNotAllowed: return .methodNotAllowed
            case .contentTooLarge: return .payloadTooLarge
            case .badRequest: return .invalidJSON()
            default:
                context.logger.error("unexpected HTTP error", metadata: ["error": .string(String(describing: error))])
                return .internal
            }
        default:
            context.logger.error("unhandled error", metadata: ["error": .string(String(reflecting: error))])
            return .internal
        }
    }
}
