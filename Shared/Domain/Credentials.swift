import Foundation

/// Wire-level checks of emails and passwords, shared by every service that accepts them.
public enum Credentials {
    /// The canonical form of a plausible email address, or nil: Unicode NFC, then lower case, so the same
    /// address typed precomposed (`é`) or decomposed (`e` + U+0301) is one account, and addresses are
    /// case-insensitive for lookup and uniqueness (docs/protocol/accounts.md#passwords). A domain label that
    /// mixes Latin, Greek, Cyrillic or Armenian letters (`pаypal.com` with a Cyrillic `а`) is refused: such
    /// look-alikes are what mixed-script labels are for (issue #23).
    public static func normalizedEmail(_ raw: String) -> String? {
        let email = raw.trimmingCharacters(in: .whitespaces).precomposedStringWithCanonicalMapping.lowercased()
        guard email.utf8.count <= 254, !email.contains(where: { $0.isWhitespace || $0.isNewline }) else { return nil }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let local = parts.first, let domain = parts.last,
            !local.isEmpty, local.utf8.count <= 64, !domain.isEmpty,
            !domain.hasPrefix("."), !domain.hasSuffix("."), !domain.contains(".."),
            !domain.contains(where: { !($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }),
            domain.split(separator: ".").allSatisfy(isSingleScript)
        else { return nil }
        return email
    }

    /// Letters of at most one of the scripts whose letters pass for each other's.
    static func isSingleScript(_ label: Substring) -> Bool {
        var seen: Int?
        for scalar in label.unicodeScalars where scalar.properties.isAlphabetic {
            let script: Int
            switch scalar.value {
            case 0x41...0x5A, 0x61...0x7A, 0xC0...0x24F, 0x1E00...0x1EFF: script = 0  // Latin
            case 0x370...0x3FF, 0x1F00...0x1FFF: script = 1  // Greek
            case 0x400...0x52F, 0x1C80...0x1C8F, 0x2DE0...0x2DFF, 0xA640...0xA69F: script = 2  // Cyrillic
            case 0x530...0x58F: script = 3  // Armenian
            default: continue
            }
            if let seen, seen != script { return false }
            seen = script
        }
        return true
    }

    public static let minimumPasswordLength = 6
    public static let maximumPasswordLength = 4096

    /// The longest display name and photo URL stored (Firebase's bound).
    public static let maximumProfileFieldLength = 2048

    /// Throws `INVALID_DISPLAY_NAME` / `INVALID_PHOTO_URL` for profile fields over 2,048 characters
    /// (issue #23): every path that stores them checks here.
    public static func checkProfile(displayName: String?, photoUrl: String?) throws {
        if let displayName, displayName.count > maximumProfileFieldLength {
            throw FirebaseError.invalid(.invalidDisplayName, "Display name must be at most 2048 characters")
        }
        if let photoUrl, photoUrl.count > maximumProfileFieldLength {
            throw FirebaseError.invalid(.invalidPhotoUrl, "Photo URL must be at most 2048 characters")
        }
    }

    /// Throws `WEAK_PASSWORD` for passwords outside 6…4096 characters (docs/protocol/accounts.md#passwords).
    public static func checkPassword(_ password: String) throws {
        if password.count < minimumPasswordLength {
            throw FirebaseError.invalid(.weakPassword, "Password should be at least 6 characters")
        }
        if password.count > maximumPasswordLength {
            throw FirebaseError.invalid(.weakPassword, "Password should be at most 4096 characters")
        }
    }
}
