import Crypto
import Foundation
import _CryptoExtras

/// Compact JWS with RS256 only. Signing and verification are swift-crypto's; this type only does
/// the encoding, and its verifier accepts nothing but RS256 with a known `kid` (never `none`, never
/// HMAC, whatever the header says).
public enum JWS {
    public struct Header: Codable, Sendable, Equatable {
        public var alg: String
        public var kid: String?
        public var typ: String?

        public init(alg: String, kid: String?, typ: String?) {
            self.alg = alg
            self.kid = kid
            self.typ = typ
        }
    }

    public enum Failure: Error, Equatable {
        case malformed
        case unsupportedAlgorithm
        case unknownKey
        case badSignature
    }

    public static func signRS256(payload: Data, kid: String, key: _RSA.Signing.PrivateKey) throws -> String {
        let signingInput = try signingInput(payload: payload, kid: kid)
        let signature = try key.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// The same token, signed by an `RS256Signer` (the token service's path).
    public static func signRS256(payload: Data, kid: String, signer: RS256Signer) throws -> String {
        let signingInput = try signingInput(payload: payload, kid: kid)
        return signingInput + "." + Base64URL.encode(try signer.signature(for: Data(signingInput.utf8)))
    }

    static func signingInput(payload: Data, kid: String) throws -> String {
        let header = Header(alg: "RS256", kid: kid, typ: "JWT")
        return Base64URL.encode(Data(header.jsonBytes())) + "." + Base64URL.encode(payload)
    }

    /// The three segments of a compact JWS, found on its UTF-8 bytes (splitting the `String` walks
    /// grapheme clusters: it was a fifth of the token service's CPU per lookup). Tokens over 16 KiB
    /// are refused before they are looked at.
    struct Segments {
        var header: Substring.UTF8View
        var payload: Substring.UTF8View
        var signature: Substring.UTF8View
        /// `header.payload`, the bytes the signature covers.
        var signingInput: Data

        init(_ token: String) throws {
            let bytes = token.utf8
            let dot = UInt8(ascii: ".")
            guard bytes.count <= 16 * 1024, let first = bytes.firstIndex(of: dot) else { throw Failure.malformed }
            let afterFirst = bytes.index(after: first)
            guard let second = bytes[afterFirst...].firstIndex(of: dot) else { throw Failure.malformed }
            let afterSecond = bytes.index(after: second)
            guard !bytes[afterSecond...].contains(dot) else { throw Failure.malformed }
            // Byte ranges, not `String` slices: a slice of the String would round an index that
            // is not on a grapheme boundary.
            header = bytes[..<first]
            payload = bytes[afterFirst..<second]
            signature = bytes[afterSecond...]
            signingInput = Data(bytes[..<second])
        }

        func decodedHeader() throws -> Header {
            guard let data = Base64URL.decode(utf8: header),
                let header = try? Header(jsonBytes: data)
            else { throw Failure.malformed }
            return header
        }
    }

    /// Splits a compact JWS and decodes its header without checking anything.
    public static func header(of token: String) throws -> Header {
        try Segments(token).decodedHeader()
    }

    /// Verifies an RS256 compact JWS and returns its payload bytes.
    public static func verifyRS256(
        _ token: String, publicKey: (String) -> _RSA.Signing.PublicKey?
    ) throws -> Data {
        let segments = try Segments(token)
        let header = try segments.decodedHeader()
        guard header.alg == "RS256" else { throw Failure.unsupportedAlgorithm }
        guard let kid = header.kid, let key = publicKey(kid) else { throw Failure.unknownKey }
        return try verifyRS256(segments, key: key)
    }

    /// Verifies an RS256 compact JWS against one given key (whatever its `kid` says) and returns
    /// its payload bytes.
    public static func verifyRS256(_ token: String, key: _RSA.Signing.PublicKey) throws -> Data {
        let segments = try Segments(token)
        guard try segments.decodedHeader().alg == "RS256" else { throw Failure.unsupportedAlgorithm }
        return try verifyRS256(segments, key: key)
    }

    private static func verifyRS256(_ segments: Segments, key: _RSA.Signing.PublicKey) throws -> Data {
        guard let payload = Base64URL.decode(utf8: segments.payload),
            let signatureBytes = Base64URL.decode(utf8: segments.signature), !signatureBytes.isEmpty
        else { throw Failure.malformed }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: signatureBytes)
        guard key.isValidSignature(signature, for: segments.signingInput, padding: .insecurePKCS1v1_5) else {
            throw Failure.badSignature
        }
        return payload
    }
}

extension JWS {
    /// The payload of a compact JWS without verifying anything (to read `iss` before the key is known).
    public static func unverifiedPayload(of token: String) throws -> Data {
        guard let payload = Base64URL.decode(utf8: try Segments(token).payload) else { throw Failure.malformed }
        return payload
    }

    /// Verifies an ES256 compact JWS (raw `r‖s` signature, RFC 7518 §3.4) and returns its payload.
    public static func verifyES256(_ token: String, key: P256.Signing.PublicKey) throws -> Data {
        let segments = try Segments(token)
        guard try segments.decodedHeader().alg == "ES256" else { throw Failure.unsupportedAlgorithm }
        guard let payload = Base64URL.decode(utf8: segments.payload),
            let signatureBytes = Base64URL.decode(utf8: segments.signature),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        else { throw Failure.malformed }
        guard key.isValidSignature(signature, for: segments.signingInput) else { throw Failure.badSignature }
        return payload
    }
}

/// The header by hand (`DirectJSONDecodable`): it is written for every token signed and read for
/// every token verified. Members in sorted order, as `JSONEncoder` with `.sortedKeys` wrote them.
extension JWS.Header: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("alg", alg)
            object.member("kid", kid)
            object.member("typ", typ)
        }
    }

    public init(json reader: inout JSONReader) throws {
        var alg: String?
        var kid: String?
        var typ: String?
        try reader.object { key, reader in
            switch key {
            case "alg": alg = try reader.string()
            case "kid": kid = try reader.optionalString()
            case "typ": typ = try reader.optionalString()
            default: try reader.skipValue()
            }
        }
        self.init(alg: try requiredJSONMember(alg, "alg"), kid: kid, typ: typ)
    }
}
