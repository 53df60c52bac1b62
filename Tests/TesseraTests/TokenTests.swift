import Crypto
import Foundation
import JWTKit
import Testing
import _CryptoExtras

@testable import TesseraShared
@testable import TokenService

/// A throw-away key directory for one test.
struct TempKeys {
    let directory: String

    init(leads: [Duration] = [.zero]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tessera-keys-\(UUID())").path
        for lead in leads { try KeyDirectory.generate(into: directory, lead: lead) }
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

@Suite("ID tokens, keys and refresh tokens")
struct TokenTests {
    static let project = "demo-project"

    func anonymousUser(tenant: String? = "tenant-a") -> (UserRecord, SessionInfo) {
        let now = Int64(Date().timeIntervalSince1970)
        let user = UserRecord(tenantId: tenant, localId: "user-1", validSince: now - 10, createdAt: now * 1000)
        let session = SessionInfo(familyId: "f", signInProvider: "anonymous", authTime: now, tokenIssuedAt: now)
        return (user, session)
    }

    /// docs/protocol/tokens.md#id-tokens
    @Test("a minted ID token carries the ID token claims and verifies")
    func mintAndVerify() throws {
        let keys = try TempKeys()
        defer { keys.remove() }
        let issuer = IDTokenIssuer(keys: try KeyStore(directory: keys.directory), projectID: Self.project)
        let (user, session) = anonymousUser()
        let token = try issuer.mint(user: user, session: session)
        let header = try JWS.header(of: token)
        #expect(header.alg == "RS256" && header.typ == "JWT" && header.kid != nil)
        let claims = issuer.claims(user: user, session: session)
        #expect(claims["iss"] == .string("https://securetoken.google.com/demo-project"))
        #expect(claims["aud"] == .string(Self.project))
        #expect(claims["sub"] == .string("user-1") && claims["user_id"] == .string("user-1"))
        #expect(claims["provider_id"] == .string("anonymous"))
        #expect(claims["exp"] == .int(session.tokenIssuedAt + 3600))
        let firebase = try #require(claims["firebase"]?.objectValue)
        #expect(firebase["sign_in_provider"] == .string("anonymous"))
        #expect(firebase["tenant"] == .string("tenant-a"))
        #expect(firebase["identities"] == .object([:]))

        let verified = try issuer.verifySignatureAndClaims(token)
        #expect(verified.localId == "user-1" && verified.scope == Scope(wire: "tenant-a"))
        // Same inputs, same token: what makes a grace-window retry return the same pair.
        #expect(try issuer.mint(user: user, session: session) == token)
    }

    @Test("the OpenSSL signer signs exactly what swift-crypto signs, and its tokens verify")
    func nativeSigner() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let signer = RS256Signer(privateKey: key)
        #expect(signer.isNative, "OpenSSL (libcrypto 3) did not load the key: the fast signing path is off")
        for message in ["", "a", String(repeating: "claims.", count: 300)] {
            let bytes = Data(message.utf8)
            // PKCS #1 v1.5 is deterministic: both implementations must give the same bytes.
            let native = try signer.signature(for: bytes)
            let reference = try key.signature(for: bytes, padding: .insecurePKCS1v1_5).rawRepresentation
            #expect(native == reference)
            #expect(
                key.publicKey.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: native), for: bytes, padding: .insecurePKCS1v1_5))
        }
        let token = try JWS.signRS256(payload: Data("{\"sub\":\"x\"}".utf8), kid: "k", signer: signer)
        #expect(token == (try JWS.signRS256(payload: Data("{\"sub\":\"x\"}".utf8), kid: "k", key: key)))
        #expect(try JWS.verifyRS256(token, key: key.publicKey) == Data("{\"sub\":\"x\"}".utf8))
    }

    @Test("a compact JWS is three segments: anything else, or over 16 KiB, is malformed; one changed byte fails")
    func compactSegments() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let payload = Data("{\"sub\":\"x\",\"name\":\"Zoë\"}".utf8)
        let token = try JWS.signRS256(payload: payload, kid: "k", key: key)
        #expect(try JWS.verifyRS256(token, publicKey: { $0 == "k" ? key.publicKey : nil }) == payload)
        #expect(try JWS.unverifiedPayload(of: token) == payload)
        #expect(try JWS.header(of: token) == JWS.Header(alg: "RS256", kid: "k", typ: "JWT"))
        let parts = token.split(separator: ".").map(String.init)
        let malformed = [
            "", ".", "..", "a.b", parts[0] + "." + parts[1], token + ".", token + ".x", "." + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + ".", parts[0] + "é." + parts[1] + "." + parts[2],
            // A prepended or combining character makes the dot part of a grapheme cluster.
            parts[0] + "\u{0600}." + parts[1] + "." + parts[2], parts[0] + ".\u{0301}" + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + "." + String(repeating: "A", count: 16 * 1024),
        ]
        for candidate in malformed {
            #expect(throws: JWS.Failure.malformed, "\(candidate.prefix(40))") {
                try JWS.verifyRS256(candidate, key: key.publicKey)
            }
        }
        // The signature covers exactly header.payload: one payload byte changed fails it.
        let otherPayload = Base64URL.encode(Data("{\"sub\":\"y\",\"name\":\"Zoë\"}".utf8))
        #expect(throws: JWS.Failure.badSignature) {
            try JWS.verifyRS256(parts[0] + "." + otherPayload + "." + parts[2], key: key.publicKey)
        }
        #expect(throws: JWS.Failure.unknownKey) { try JWS.verifyRS256(token, publicKey: { _ in nil }) }
        let none = Base64URL.encode(Data("{\"alg\":\"none\",\"kid\":\"k\"}".utf8))
        #expect(throws: JWS.Failure.unsupportedAlgorithm) {
            try JWS.verifyRS256(none + "." + parts[1] + "." + parts[2], key: key.publicKey)
        }
    }

    @Test("custom claims cannot override reserved claims")
    func reservedClaimsWin() throws {
        let keys = try TempKeys()
        defer { keys.remove() }
        let issuer = IDTokenIssuer(keys: try KeyStore(directory: keys.directory), projectID: Self.project)
        var (user, session) = anonymousUser()
        user.customAttributes = #"{"admin":true,"sub":"someone-else","name":"Custom"}"#
        user.displayName = "Profile"
        let claims = issuer.claims(user: user, session: session)
        #expect(claims["admin"] == .bool(true))
        #expect(claims["sub"] == .string("user-1"))
        #expect(claims["name"] == .string("Custom"))
        session.signInProvider = "password"
        #expect(issuer.claims(user: user, session: session)["provider_id"] == nil)
        // A user without an email or phone gets none from custom or custom-token claims.
        user.customAttributes = #"{"email":"victim@example.com","email_verified":true,"phone_number":"+15555550100"}"#
        session.extraClaims = #"{"provider_id":"anonymous","user_id":"someone-else"}"#
        let injected = issuer.claims(user: user, session: session)
        for name in ["email", "email_verified", "phone_number", "provider_id"] {
            #expect(injected[name] == nil, "\(name)")
        }
        #expect(injected["user_id"] == .string("user-1"))
    }

    func tamper(
        _ token: String, header: [String: Any]? = nil, payload: (inout [String: Any]) -> Void = { _ in },
        signature: String? = nil
    ) throws -> String {
        let parts = token.split(separator: ".").map(String.init)
        var body = try JSONSerialization.jsonObject(with: Base64URL.decode(parts[1])!) as! [String: Any]
        payload(&body)
        let h = try header.map { Base64URL.encode(try JSONSerialization.data(withJSONObject: $0)) } ?? parts[0]
        let p = Base64URL.encode(try JSONSerialization.data(withJSONObject: body))
        return "\(h).\(p).\(signature ?? parts[2])"
    }

    @Test("forged tokens are refused: alg none, HS256 with the public key, tampered claims, unknown kid, expired")
    func forgeries() throws {
        let keys = try TempKeys()
        defer { keys.remove() }
        let store = try KeyStore(directory: keys.directory)
        let issuer = IDTokenIssuer(keys: store, projectID: Self.project)
        let (user, session) = anonymousUser()
        let token = try issuer.mint(user: user, session: session)
        let kid = store.current.signer.kid

        func code(_ token: String) -> String? {
            do {
                _ = try issuer.verifySignatureAndClaims(token)
                return nil
            } catch let error as FirebaseError {
                return error.code
            } catch {
                return "unexpected"
            }
        }

        // alg none, empty signature.
        #expect(
            code(try tamper(token, header: ["alg": "none", "typ": "JWT", "kid": kid], signature: ""))
                == "INVALID_ID_TOKEN")
        // HS256 keyed with the public key's PEM.
        let pem = store.current.signer.publicKey.pemRepresentation
        let hsHeader = Base64URL.encode(
            try JSONSerialization.data(withJSONObject: ["alg": "HS256", "typ": "JWT", "kid": kid]))
        let hsPayload = token.split(separator: ".")[1]
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(hsHeader).\(hsPayload)".utf8), using: SymmetricKey(data: Data(pem.utf8)))
        #expect(code("\(hsHeader).\(hsPayload).\(Base64URL.encode(Array(mac)))") == "INVALID_ID_TOKEN")
        // Claims changed under the original signature.
        #expect(code(try tamper(token, payload: { $0["aud"] = "other-project" })) == "INVALID_ID_TOKEN")
        #expect(
            code(
                try tamper(
                    token,
                    payload: {
                        $0["user_id"] = "admin"; $0["sub"] = "admin"
                    })) == "INVALID_ID_TOKEN")
        // A kid the service does not know, signed with a key of the attacker's.
        let foreign = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let claims = try JSONEncoder().encode(issuer.claims(user: user, session: session))
        #expect(code(try JWS.signRS256(payload: claims, kid: "attacker", key: foreign)) == "INVALID_ID_TOKEN")
        // The attacker's key under the real kid.
        #expect(code(try JWS.signRS256(payload: claims, kid: kid, key: foreign)) == "INVALID_ID_TOKEN")
        // Garbage.
        #expect(code("not-a-token") == "INVALID_ID_TOKEN")
        // Genuinely expired: issued two hours ago with the real key.
        var old = session
        old.tokenIssuedAt -= 7200
        old.authTime -= 7200
        #expect(code(try issuer.mint(user: user, session: old)) == "TOKEN_EXPIRED")
        // Wrong audience, correctly signed (another deployment's issuer with the same key directory).
        let other = IDTokenIssuer(keys: store, projectID: "other-project")
        #expect(code(try other.mint(user: user, session: session)) == "INVALID_ID_TOKEN")
    }

    @Test("a key signs only once its Sign-From has passed; every key is published")
    func rotation() throws {
        let keys = try TempKeys(leads: [.zero, .seconds(3600)])
        defer { keys.remove() }
        let set = try KeyStore(directory: keys.directory).current
        #expect(set.keys.count == 2)
        let current = try #require(set.keys.first { $0.signFrom <= Date() })
        #expect(set.signer.kid == current.kid)
        let jwks = try JSONSerialization.jsonObject(with: set.jwksJSON) as! [String: [[String: String]]]
        #expect(Set(jwks["keys"]!.map { $0["kid"]! }) == Set(set.keys.map(\.kid)))
        #expect(jwks["keys"]!.allSatisfy { $0["alg"] == "RS256" && $0["kty"] == "RSA" && $0["n"] != nil })
        let x509 = try JSONSerialization.jsonObject(with: set.x509JSON) as! [String: String]
        #expect(x509.count == 2 && x509.values.allSatisfy { $0.hasPrefix("-----BEGIN CERTIFICATE-----") })
        // An hour later the new key signs and the old one is still published.
        let later = try KeySet(keys: set.keys, now: Date().addingTimeInterval(3601))
        #expect(later.signer.kid != current.kid && later.publicKey(kid: current.kid) != nil)
    }

    @Test(
        "keys are written dated; a dated key's certificate spans 20 years from a day before it signs, an undated one's never ends"
    )
    func keyDates() throws {
        let keys = try TempKeys(leads: [.seconds(3600)])
        defer { keys.remove() }
        let file = try #require(try FileManager.default.contentsOfDirectory(atPath: keys.directory).first)
        let text = try String(contentsOfFile: keys.directory + "/" + file, encoding: .utf8)
        #expect(text.hasPrefix("Tessera-Sign-From: "))
        let key = try #require(try KeyDirectory.load(from: keys.directory).first)
        #expect(abs(key.signFrom.timeIntervalSinceNow - 3600) < 5)
        #expect(key.notAfter == key.signFrom.addingTimeInterval(-86400 + 20 * 365 * 86400))
        // A key file written by hand, without the header, signs from the epoch; its certificate used
        // to end in 1989.
        let body = text.split(separator: "\n", maxSplits: 1)[1]
        let undated = try KeyDirectory.parse(String(body), kid: "undated", file: "undated.pem")
        #expect(undated.signFrom.timeIntervalSince1970 == 0)
        #expect(undated.notAfter == Date(timeIntervalSince1970: 253_402_300_799))
    }

    @Test("key files with a bad name, a small key or no PEM block are refused")
    func badKeyFiles() throws {
        let keys = try TempKeys()
        defer { keys.remove() }
        let small = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        try small.pkcs8PEMRepresentation.write(toFile: keys.directory + "/small.pem", atomically: true, encoding: .utf8)
        #expect(throws: KeyDirectoryError.self) { try KeyDirectory.load(from: keys.directory) }
        try FileManager.default.removeItem(atPath: keys.directory + "/small.pem")
        try "hello".write(toFile: keys.directory + "/bad name.pem", atomically: true, encoding: .utf8)
        #expect(throws: KeyDirectoryError.self) { try KeyDirectory.load(from: keys.directory) }
    }

    @Test("a sealed successor opens only with the token it was sealed with")
    func sealing() throws {
        let old = RefreshTokens.generate()
        let new = RefreshTokens.generate()
        #expect(RefreshTokens.isWellFormed(old) && old != new)
        let sealed = try RefreshTokens.seal(successor: new, with: old)
        #expect(!sealed.contains(new))
        #expect(try RefreshTokens.open(sealed, with: old) == new)
        #expect(throws: FirebaseError.self) { try RefreshTokens.open(sealed, with: new) }
        #expect(!RefreshTokens.isWellFormed("short"))
    }
}

/// jwt-kit, an independent JWT library, verifies Tessera's tokens given only the published JWKS.
@Suite("ID tokens verified by jwt-kit")
struct JWTKitInteroperabilityTests {
    struct FirebaseClaims: JWTPayload {
        var iss: IssuerClaim
        var aud: AudienceClaim
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var user_id: String

        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
            try aud.verifyIntendedAudience(includes: "demo-project")
        }
    }

    @Test("jwt-kit verifies a Tessera ID token from the JWKS alone, and refuses one from another key")
    func verifiesFromJWKS() async throws {
        let keys = try TempKeys(leads: [.zero, .seconds(3600)])
        defer { keys.remove() }
        let store = try KeyStore(directory: keys.directory)
        let issuer = IDTokenIssuer(keys: store, projectID: "demo-project")
        let now = Int64(Date().timeIntervalSince1970)
        let user = UserRecord(tenantId: nil, localId: "user-9", validSince: now, createdAt: now * 1000)
        let token = try issuer.mint(
            user: user,
            session: SessionInfo(familyId: "f", signInProvider: "anonymous", authTime: now, tokenIssuedAt: now))

        let collection = JWTKeyCollection()
        try await collection.add(jwksJSON: String(decoding: store.current.jwksJSON, as: UTF8.self))
        let claims = try await collection.verify(token, as: FirebaseClaims.self)
        #expect(claims.sub.value == "user-9" && claims.user_id == "user-9")
        #expect(claims.iss.value == "https://securetoken.google.com/demo-project")

        let other = try TempKeys()
        defer { other.remove() }
        let stranger = IDTokenIssuer(keys: try KeyStore(directory: other.directory), projectID: "demo-project")
        let foreign = try stranger.mint(
            user: user,
            session: SessionInfo(familyId: "f", signInProvider: "anonymous", authTime: now, tokenIssuedAt: now))
        await #expect(throws: (any Error).self) { _ = try await collection.verify(foreign, as: FirebaseClaims.self) }
    }
}
