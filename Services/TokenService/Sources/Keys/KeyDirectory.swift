import Crypto
import Foundation
import Logging
import Prometheus
import SwiftASN1
import Synchronization
import TesseraShared
import X509
import _CryptoExtras

/// One signing key from the key directory, with its public forms rendered once.
public struct SigningKey: Sendable {
    public let kid: String
    public let privateKey: _RSA.Signing.PrivateKey
    /// Signs with the private key (OpenSSL where it can, see RS256Signer).
    public let signer: RS256Signer
    public let publicKey: _RSA.Signing.PublicKey
    /// When the key may start signing; it is published from the moment it is loaded.
    public let signFrom: Date
    /// The end of its X.509 certificate's validity.
    public let notAfter: Date
    let jwk: [String: String]
    let certificatePEM: String

    init(kid: String, privateKey: _RSA.Signing.PrivateKey, signFrom: Date) throws {
        self.kid = kid
        self.privateKey = privateKey
        self.signer = RS256Signer(privateKey: privateKey)
        self.publicKey = privateKey.publicKey
        self.signFrom = signFrom
        let primitives = try publicKey.getKeyPrimitives()
        self.jwk = [
            "kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
            "n": Base64URL.encode(primitives.modulus), "e": Base64URL.encode(primitives.publicExponent),
        ]
        let validity = Self.validity(signFrom: signFrom)
        self.notAfter = validity.notAfter
        self.certificatePEM = try Self.selfSignedCertificate(for: privateKey, validity: validity)
    }

    /// The certificate's validity: from a day before the key may sign, for 20 years. A key without
    /// `Tessera-Sign-From` (signing from the epoch) has no well-defined end: 9999-12-31T23:59:59Z,
    /// RFC 5280's value for that (a 20-year span from the epoch ended in 1989).
    static func validity(signFrom: Date) -> (notBefore: Date, notAfter: Date) {
        guard signFrom.timeIntervalSince1970 > 0 else {
            return (signFrom, Date(timeIntervalSince1970: 253_402_300_799))
        }
        let notBefore = signFrom.addingTimeInterval(-86400)
        return (notBefore, notBefore.addingTimeInterval(20 * 365 * 86400))
    }

    /// A self-signed X.509 certificate for the X.509 key map. Everything in it is derived from the key
    /// and its `signFrom`, so every replica serves the same certificate for a kid.
    static func selfSignedCertificate(
        for key: _RSA.Signing.PrivateKey, validity: (notBefore: Date, notAfter: Date)
    ) throws -> String {
        let publicDER = Array(key.publicKey.derRepresentation)
        var serial = Array(SHA256.hash(data: publicDER).prefix(16))
        serial[0] &= 0x7F
        let name = try DistinguishedName { CommonName("securetoken.system.gserviceaccount.com") }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(bytes: serial),
            publicKey: Certificate.PublicKey(key.publicKey), notValidBefore: validity.notBefore,
            notValidAfter: validity.notAfter, issuer: name, subject: name,
            signatureAlgorithm: .sha256WithRSAEncryption, extensions: Certificate.Extensions(),
            issuerPrivateKey: Certificate.PrivateKey(key))
        return try certificate.serializeAsPEM().pemString + "\n"
    }
}

/// The keys of the directory: all published, one signing.
public struct KeySet: Sendable {
    public let keys: [SigningKey]
    public let signer: SigningKey
    /// `{"keys":[…]}`, rendered once per load: the key endpoints never compute anything per request.
    public let jwksJSON: Data
    /// `{"<kid>":"<PEM certificate>"}`.
    public let x509JSON: Data
    let publicKeys: [String: _RSA.Signing.PublicKey]

    /// The newest key whose `signFrom` has passed signs; if none has passed yet (a brand-new
    /// deployment whose only key was generated with a lead), the earliest key signs.
    public init(keys: [SigningKey], now: Date = Date()) throws {
        guard !keys.isEmpty else { throw KeyDirectoryError.empty }
        let sorted = keys.sorted { ($0.signFrom, $0.kid) < ($1.signFrom, $1.kid) }
        self.keys = sorted
        self.signer = sorted.last(where: { $0.signFrom <= now }) ?? sorted[0]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        self.jwksJSON = try encoder.encode(["keys": sorted.map(\.jwk)])
        self.x509JSON = try encoder.encode(Dictionary(uniqueKeysWithValues: sorted.map { ($0.kid, $0.certificatePEM) }))
        self.publicKeys = Dictionary(uniqueKeysWithValues: sorted.map { ($0.kid, $0.publicKey) })
    }

    public func publicKey(kid: String) -> _RSA.Signing.PublicKey? { publicKeys[kid] }
}

public enum KeyDirectoryError: Error, CustomStringConvertible {
    case empty
    case unreadable(String, String)

    public var description: String {
        switch self {
        case .empty: "the signing key directory holds no *.pem key"
        case .unreadable(let file, let why): "signing key \(file) is unusable: \(why)"
        }
    }
}

/// Reads and writes the key directory (docs/configuration.md, "Signing keys").
public enum KeyDirectory {
    static let signFromHeader = "Tessera-Sign-From:"

    public static func load(from directory: String) throws -> [SigningKey] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".pem") }
            .sorted()
        return try names.map { name in
            let kid = String(name.dropLast(4))
            guard !kid.isEmpty, kid.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
            else {
                throw KeyDirectoryError.unreadable(name, "the file name must be <kid>.pem with kid of [A-Za-z0-9_-]")
            }
            let text = try String(contentsOfFile: directory + "/" + name, encoding: .utf8)
            return try parse(text, kid: kid, file: name)
        }
    }

    static func parse(_ text: String, kid: String, file: String) throws -> SigningKey {
        var signFrom = Date(timeIntervalSince1970: 0)
        guard let pemStart = text.range(of: "-----BEGIN") else {
            throw KeyDirectoryError.unreadable(file, "no PEM block")
        }
        for line in text[..<pemStart.lowerBound].split(whereSeparator: \.isNewline) {
            if line.hasPrefix(signFromHeader) {
                let value = line.dropFirst(signFromHeader.count).trimmingCharacters(in: .whitespaces)
                guard let date = RFC3339.parse(value) else {
                    throw KeyDirectoryError.unreadable(file, "Tessera-Sign-From is not an RFC 3339 time")
                }
                signFrom = date
            }
        }
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: String(text[pemStart.lowerBound...]))
        } catch {
            throw KeyDirectoryError.unreadable(file, "not an RSA private key in PEM form")
        }
        guard key.keySizeInBits >= 2048 else {
            throw KeyDirectoryError.unreadable(file, "RSA keys must be 2048 bits or more")
        }
        return try SigningKey(kid: kid, privateKey: key, signFrom: signFrom)
    }

    /// When `key` (a file of `directory`) could begin signing: its `Tessera-Sign-From`, or for a key
    /// without one, its file's modification time.
    public static func signingStart(of key: SigningKey, in directory: String) -> Date {
        guard key.signFrom.timeIntervalSince1970 <= 0 else { return key.signFrom }
        let attributes = try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(key.kid).pem")
        return attributes?[.modificationDate] as? Date ?? key.signFrom
    }

    /// Writes a new 2048-bit key, published at once, signing after `lead`. Returns its kid.
    @discardableResult
    public static func generate(into directory: String, lead: Duration, now: Date = Date()) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let day = now.formatted(.iso8601.year().month().day().dateSeparator(.omitted))
        let kid = "k\(day)-\(Secrets.randomAlphanumeric(8).lowercased())"
        // Always dated, with no lead too: the date is when the key began signing (the
        // `tessera_signing_key_active_since` metric, `tessera keys list`) and its certificate's start.
        var text = "\(signFromHeader) \(RFC3339.seconds(now.addingTimeInterval(lead.timeInterval)))\n"
        text += key.pkcs8PEMRepresentation + "\n"
        let path = directory + "/" + kid + ".pem"
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { throw KeyDirectoryError.unreadable(path, "cannot write the file") }
        return kid
    }
}

/// Holds the current key set; swapped atomically when the directory is re-read.
public final class KeyStore: Sendable {
    private let state: Mutex<KeySet>
    let directory: String

    public init(directory: String) throws {
        self.directory = directory
        self.state = Mutex(try KeySet(keys: try KeyDirectory.load(from: directory)))
    }

    public var current: KeySet { state.withLock { $0 } }

    /// Publishes the key set's dates at each scrape, labelled `set` (`id_token`, `session_cookie`):
    /// when the signing key began signing (its `Tessera-Sign-From`, else its file's modification
    /// time), the earliest end of a published key's certificate, and how many keys are published.
    public func observe(metrics: ServiceMetrics, set: String) {
        let labels = [("set", set)]
        let activeSince = metrics.gauge(
            "signing_key_active_since_timestamp", unit: "seconds", labels: labels,
            help: "When the key that signs now began signing (Unix time).")
        let expiry = metrics.gauge(
            "signing_key_expiry_timestamp", unit: "seconds", labels: labels,
            help: "The earliest end of validity of a published key's X.509 certificate (Unix time).")
        let published = metrics.gauge("signing_keys", unit: "", labels: labels, help: "Signing keys published.")
        let directory = self.directory
        metrics.onScrape {
            let set = self.current
            activeSince.set(KeyDirectory.signingStart(of: set.signer, in: directory).timeIntervalSince1970)
            expiry.set(set.keys.map(\.notAfter.timeIntervalSince1970).min() ?? 0)
            published.set(Double(set.keys.count))
        }
    }

    /// Re-reads the directory; on failure the previous key set stays in force.
    public func reload(logger: Logger) {
        do {
            let set = try KeySet(keys: try KeyDirectory.load(from: directory))
            let previous = state.withLock { old in
                defer { old = set }
                return old
            }
            if previous.signer.kid != set.signer.kid || previous.keys.map(\.kid) != set.keys.map(\.kid) {
                logger.notice(
                    "signing keys reloaded",
                    metadata: ["keys.signer": .string(set.signer.kid), "keys.published": "\(set.keys.map(\.kid))"])
            }
        } catch {
            logger.error("signing key reload failed; keeping the previous keys", metadata: ["error": "\(error)"])
        }
    }
}
