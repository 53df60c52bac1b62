import Foundation
import Logging
import TesseraShared
import _CryptoExtras

/// Custom-token verification (docs/protocol/tokens.md#token-rules, #custom-tokens): every rule, with the
/// answers Firebase gives.
enum CustomTokens {
    static let audience = "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"
    static let maximumLifetime: Int64 = 3600
    static let clockSkew: Int64 = 300

    struct Payload: Decodable {
        var iss: String?
        var sub: String?
        var aud: JSONValue?
        var iat: JSONValue?
        var exp: JSONValue?
        var uid: JSONValue?
        var claims: JSONValue?
        var tenant_id: String?
    }

    struct Verified: Sendable {
        var uid: String
        /// Validated claims text, nil when none.
        var claims: String?
    }

    static func invalid(_ detail: String) -> FirebaseError {
        FirebaseError.invalid(.invalidCustomToken, detail)
    }

    static func verify(
        _ token: String, scope: Scope, accounts: ServiceAccountStore, now: Date = Date(), logger: Logger
    ) async throws -> Verified {
        guard let header = try? JWS.header(of: token), let unverified = try? JWS.unverifiedPayload(of: token) else {
            throw invalid("The custom token format is incorrect. Please check the documentation.")
        }
        guard header.alg == "RS256" else { throw invalid("Custom tokens must be signed with RS256.") }
        let claimedIssuer = (try? JSONDecoder().decode(Payload.self, from: unverified))?.iss
        guard let account = try await accounts.signer(keyId: header.kid, issuer: claimedIssuer, logger: logger),
            let key = try? _RSA.Signing.PublicKey(pemRepresentation: account.publicKeyPem)
        else { throw invalid("The custom token is not signed by a registered service account.") }
        guard let data = try? JWS.verifyRS256(token, key: key) else {
            throw invalid("The custom token's signature is invalid.")
        }
        guard let payload = try? JSONDecoder().decode(Payload.self, from: data) else {
            throw invalid("The custom token's payload is not a JSON object.")
        }
        guard payload.aud?.stringValue == audience else { throw invalid("Invalid aud (audience) claim.") }
        guard payload.iss == account.clientEmail, payload.sub == account.clientEmail else {
            throw invalid("iss and sub must be the service account's client_email.")
        }
        guard let iat = payload.iat?.intValue, let exp = payload.exp?.intValue else {
            throw invalid("iat and exp are required.")
        }
        let nowSeconds = Int64(now.timeIntervalSince1970)
        guard exp > nowSeconds else { throw invalid("The custom token has expired.") }
        // Claims are any JSON integers: subtract without trapping on overflow.
        let (lifetime, overflow) = exp.subtractingReportingOverflow(iat)
        guard exp > iat, !overflow, lifetime <= maximumLifetime else {
            throw invalid("The custom token's lifetime (exp - iat) must not exceed one hour.")
        }
        guard iat <= nowSeconds + clockSkew else { throw invalid("The custom token was issued in the future.") }
        if Scope(wire: payload.tenant_id) != scope { throw FirebaseError.invalid(.tenantIdMismatch) }
        if let own = account.owner.tenant, own != scope { throw FirebaseError.invalid(.credentialMismatch) }
        guard let uid = payload.uid?.stringValue, !uid.isEmpty else {
            throw FirebaseError.invalid(.missingIdentifier)
        }
        guard uid.count <= 128 else { throw invalid("uid must be at most 128 characters.") }
        var claims: String?
        switch payload.claims {
        case nil, .null?: claims = nil
        case .object?:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            claims = try CustomClaims.validate(String(decoding: try encoder.encode(payload.claims), as: UTF8.self))
        default: throw FirebaseError.invalid(.invalidClaims)
        }
        return Verified(uid: uid, claims: claims)
    }
}
