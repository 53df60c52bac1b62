import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// What every Tessera request context carries: the request id, taken from `X-Request-ID` when the
/// ingress or a sibling service sent one.
public protocol TesseraContext: RequestContext {
    var requestID: String { get set }
}

/// The request context of the services that need nothing more than the request id.
public struct TesseraRequestContext: TesseraContext {
    public var coreContext: CoreRequestContextStorage
    public var requestID: String
    /// The peer's address (the ingress, behind one); see `ClientAddress` for the end user's.
    public var remoteAddress: String?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.requestID = ""
        self.remoteAddress = source.channel.remoteAddress?.ipAddress
    }
}

extension HTTPField.Name {
    public static let requestID = HTTPField.Name("X-Request-ID")!
    public static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    public static let internalSecret = HTTPField.Name("X-Tessera-Internal")!
    public static let googAPIKey = HTTPField.Name("x-goog-api-key")!
}

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
        let level: Logger.Level = response.status.code >= 500 ? .error : .debug
        context.logger.log(
            level: level, "request",
            metadata: [
                "http.method": .string(request.method.rawValue),
                "http.path": .string(request.uri.path),
                "http.status": .stringConvertible(response.status.code),
            ])
        return response
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

extension Request {
    /// The token of `Authorization: Bearer <token>` (scheme case-insensitive). Other schemes count
    /// as no credential at all (API.md B.0).
    public var bearerToken: String? {
        guard let header = headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// Reads the body (at most `limit` bytes) and decodes it as JSON. Snake-case keys are accepted as
    /// their camelCase twins; an empty body decodes as `{}`.
    public func decodeJSON<T: Decodable>(
        _ type: T.Type, context: some RequestContext, limit: Int = 1 << 20
    ) async throws -> T {
        var request = self
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch {
            throw FirebaseError.payloadTooLarge
        }
        let data = buffer.readableBytes == 0 ? Data("{}".utf8) : Data(buffer.readableBytesView)
        return try JSONBody.decode(type, from: data)
    }
}

public enum JSONBody {
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if let direct = type as? any DirectJSONDecodable.Type {
            // The internal requests of the hot paths (camelCase only: the token service writes them).
            do {
                if let value = try direct.init(jsonBytes: data) as? T { return value }
            } catch {
                throw FirebaseError.invalidJSON()
            }
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            return try decoder.decode(type, from: data)
        } catch let error as DecodingError {
            throw FirebaseError.invalidJSON(describe(error))
        } catch {
            throw FirebaseError.invalidJSON()
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "Invalid value at '\(path(context.codingPath))'."
        case .keyNotFound(let key, let context):
            return "Missing field '\(path(context.codingPath + [key]))'."
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "Syntax error." : "Invalid value at '\(path(context.codingPath))'."
        @unknown default:
            return ""
        }
    }
}

/// A JSON response with an explicit status.
public struct JSONResponse<Body: Encodable & Sendable>: ResponseGenerator {
    public var status: HTTPResponse.Status
    public var body: Body
    public var headers: HTTPFields

    public init(_ body: Body, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) {
        self.body = body
        self.status = status
        self.headers = headers
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=UTF-8"
        if let direct = body as? any DirectJSONEncodable {
            let bytes = direct.jsonBytes()
            return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let data = try encoder.encode(body)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// A body with no fields: `{}`.
public struct EmptyObject: Codable, Sendable {
    public init() {}
}

/// `{"status":"ok"}` for health endpoints.
public struct HealthStatus: Codable, Sendable {
    public var status: String
    public var version = TesseraVersion.current
    public init(_ status: String = "ok") { self.status = status }
}
