import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

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
