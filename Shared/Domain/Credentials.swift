import Foundation

/// Wire-level checks of emails and passwords, shared by every service that accepts them.
public enum Credentials {
    /// The canonical (lower-case) form of a plausible email address, or nil. Addresses are
    /// case-insensitive for lookup and uniqueness (A.9).
    public static func normalizedEmail(_ raw: String) -> String? {
        let email = raw.trimmingCharacters(in: .whitespaces).lowercased()
        guard email.utf8.count <= 254, !email.contains(where: { $0.isWhitespace || $0.isNewline }) else { return nil }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let local = parts.first, let domain = parts.last,
            !local.isEmpty, local.utf8.count <= 64, !domain.isEmpty,
            !domain.hasPrefix("."), !domain.hasSuffix("."), !domain.contains(".."),
            !domain.contains(where: { !($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") })
        else { return nil }
        return email
    }

    public static let minimumPasswordLength = 6
    public static let maximumPasswordLength = 4096

    /// Throws `WEAK_PASSWORD` for passwords outside 6…4096 characters (A.9).
    public static func checkPassword(_ password: String) throws {
        if password.count < minimumPasswordLength {
            throw FirebaseError.invalid("WEAK_PASSWORD", "Password should be at least 6 characters")
        }
        if password.count > maximumPasswordLength {
            throw FirebaseError.invalid("WEAK_PASSWORD", "Password should be at most 4096 characters")
        }
    }
}
