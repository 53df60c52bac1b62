import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension Request {
    /// The token of `Authorization: Bearer <token>` (scheme case-insensitive). Other schemes count
    /// as no credential at all (docs/protocol/README.md#transport-conventions).
    public var bearerToken: String? { headers[.authorization].flatMap(Self.bearerToken(in:)) }

    /// The token of an `Authorization: Bearer <token>` value (the scheme in any case); nil for any
    /// other scheme or an empty token. Also for authorizations relayed in a body (`admin:check`).
    public static func bearerToken(in authorization: String) -> String? {
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// Reads the body (at most `limit` bytes) and decodes it as JSON. Snake-case keys are accepted as
    /// their camelCase twins; an empty body decodes as `{}`.
    public func decodeJSON<T: Decodable>(
        _ type: T.Type, context: some RequestContext, limit: Int = 1 << 20
    ) async throws -> T {
        try JSONBody.decode(type, from: try await jsonData(limit: limit))
    }

    /// The body (at most `limit` bytes; `413` beyond), `{}` when empty.
    public func jsonData(limit: Int = 1 << 20) async throws -> Data {
        var request = self
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch {
            throw FirebaseError.payloadTooLarge
        }
        return buffer.readableBytes == 0 ? Data("{}".utf8) : Data(buffer.readableBytesView)
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
