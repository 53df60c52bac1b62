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
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Base64URL.encode(try encoder.encode(header)) + "." + Base64URL.encode(payload)
    }

    /// Splits a compact JWS and decodes its header without checking anything.
    public static func header(of token: String) throws -> Header {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Base64URL.decode(parts[0]) else { throw Failure.malformed }
        guard let header = try? JSONDecoder().decode(Header.self, from: data) else { throw Failure.malformed }
        return header
    }

    /// Verifies an RS256 compact JWS and returns its payload bytes.
    public static func verifyRS256(
        _ token: String, publicKey: (String) -> _RSA.Signing.PublicKey?
    ) throws -> Data {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16 * 1024 else { throw Failure.malformed }
        let header = try header(of: token)
        guard header.alg == "RS256" else { throw Failure.unsupportedAlgorithm }
        guard let kid = header.kid, let key = publicKey(kid) else { throw Failure.unknownKey }
        return try verifyRS256(token, key: key)
    }

    /// Verifies an RS256 compact JWS against one given key (whatever its `kid` says) and returns
    /// its payload bytes.
    public static func verifyRS256(_ token: String, key: _RSA.Signing.PublicKey) throws -> Data {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16 * 1024 else { throw Failure.malformed }
        guard try header(of: token).alg == "RS256" else { throw Failure.unsupportedAlgorithm }
        guard let payload = Base64URL.decode(parts[1]), let signatureBytes = Base64URL.decode(parts[2]),
            !signatureBytes.isEmpty
        else { throw Failure.malformed }
        let signingInput = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let signature = _RSA.Signing.RSASignature(rawRepresentation: signatureBytes)
        guard key.isValidSignature(signature, for: signingInput, padding: .insecurePKCS1v1_5) else {
            throw Failure.badSignature
        }
        return payload
    }
}

extension JWS {
    /// The payload of a compact JWS without verifying anything (to read `iss` before the key is known).
    public static func unverifiedPayload(of token: String) throws -> Data {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16 * 1024, let payload = Base64URL.decode(parts[1]) else {
            throw Failure.malformed
        }
        return payload
    }

    /// Verifies an ES256 compact JWS (raw `r‖s` signature, RFC 7518 §3.4) and returns its payload.
    public static func verifyES256(_ token: String, key: P256.Signing.PublicKey) throws -> Data {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16 * 1024 else { throw Failure.malformed }
        guard try header(of: token).alg == "ES256" else { throw Failure.unsupportedAlgorithm }
        guard let payload = Base64URL.decode(parts[1]), let signatureBytes = Base64URL.decode(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        else { throw Failure.malformed }
        let signingInput = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(signature, for: signingInput) else { throw Failure.badSignature }
        return payload
    }
}
