import COpenSSLRSA
import Foundation
import _CryptoExtras

/// Signs RS256 with an RSA private key. The signature is computed by the system's OpenSSL 3, whose
/// RSA code uses AVX-512 IFMA where the CPU has it (measured on the benchmark machine: 2.9 times as
/// many signatures per core as swift-crypto's BoringSSL; see docs/benchmarks.md); when OpenSSL cannot
/// load the key, swift-crypto signs. PKCS #1 v1.5 signatures are deterministic, so both paths give
/// the same bytes, which the tests check.
public final class RS256Signer: @unchecked Sendable {
    // @unchecked: `native` is created once, never mutated and freed in deinit; OpenSSL allows one
    // EVP_PKEY to sign on several threads at once.
    public let privateKey: _RSA.Signing.PrivateKey
    private let native: OpaquePointer?

    public init(privateKey: _RSA.Signing.PrivateKey) {
        self.privateKey = privateKey
        let pem = privateKey.pemRepresentation
        native = pem.withCString { tessera_rsa_key_from_pem($0, strlen($0)) }
    }

    deinit {
        if let native { tessera_rsa_key_free(native) }
    }

    /// Whether OpenSSL signs (false: swift-crypto does).
    public var isNative: Bool { native != nil }

    /// RSASSA-PKCS1-v1_5 with SHA-256.
    public func signature(for message: some DataProtocol) throws -> Data {
        guard let native else {
            return try privateKey.signature(for: Data(message), padding: .insecurePKCS1v1_5).rawRepresentation
        }
        let bytes = Array(message)
        var length = tessera_rsa_signature_size(native)
        var signature = [UInt8](repeating: 0, count: length)
        let status = bytes.withUnsafeBufferPointer { input in
            signature.withUnsafeMutableBufferPointer { output in
                tessera_rsa_sign_sha256(native, input.baseAddress, input.count, output.baseAddress, &length)
            }
        }
        guard status == 0 else {
            return try privateKey.signature(for: Data(message), padding: .insecurePKCS1v1_5).rawRepresentation
        }
        return Data(signature.prefix(length))
    }
}
