import Foundation

/// Validation of custom claims (`customAttributes`, docs/protocol/tokens.md#id-tokens).
public enum CustomClaims {
    /// JWT's own claims, and the ones an ID token takes from the account (docs/protocol/tokens.md#id-tokens:
    /// reserved list): custom claims may add none of them, so `email`, `email_verified` or `phone_number` in
    /// a token always come from the account, and `provider_id` only from an anonymous sign-in.
    public static let reserved: Set<String> = [
        "iss", "aud", "sub", "iat", "exp", "nbf", "jti", "nonce", "azp", "acr", "amr", "cnf", "auth_time",
        "firebase", "at_hash", "c_hash", "email", "email_verified", "phone_number", "provider_id", "user_id",
    ]
    public static let maximumLength = 1000

    /// Returns the claims text to store, or nil for "no claims" (`{}`); throws `CLAIMS_TOO_LARGE`,
    /// `INVALID_CLAIMS` or `FORBIDDEN_CLAIM : <name>`.
    public static func validate(_ text: String) throws -> String? {
        if text.count > maximumLength { throw FirebaseError.invalid(.claimsTooLarge) }
        guard let data = text.data(using: .utf8),
            case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: data)
        else { throw FirebaseError.invalid(.invalidClaims) }
        if let forbidden = object.keys.sorted().first(where: reserved.contains) {
            throw FirebaseError.invalid(.forbiddenClaim, forbidden)
        }
        // `email\u{0000}` is not `email` here, but may be to a verifier that reads names as C strings
        // or drops invisible characters (issue #35).
        if object.keys.contains(where: isUnprintableName) {
            throw FirebaseError.invalid(.invalidClaims, "claim names may not contain control or invisible characters")
        }
        return object.isEmpty ? nil : text
    }

    /// A name with a control character or an invisible formatting one (zero-width, bidi).
    public static func isUnprintableName(_ name: String) -> Bool {
        name.unicodeScalars.contains {
            $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
        }
    }
}

extension Credentials {
    /// E.164: `+` and 2–15 digits, no leading zero.
    public static func isPhoneNumber(_ text: String) -> Bool {
        guard text.hasPrefix("+") else { return false }
        let digits = text.dropFirst()
        return (2...15).contains(digits.count) && digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber)
            && digits.first != "0"
    }
}
