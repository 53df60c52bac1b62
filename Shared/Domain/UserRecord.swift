import Foundation

/// A user as the directory hands it to the other services (internal API). Timestamps are integers:
/// `validSince` in seconds, the others in milliseconds since the epoch.
public struct UserRecord: Codable, Sendable, Equatable {
    public var tenantId: String?
    public var localId: String
    public var email: String?
    public var emailVerified: Bool
    public var displayName: String?
    public var photoUrl: String?
    /// E.164 (`+16505550100`): the number the user signs in with by SMS (docs/protocol/phone.md), or one an
    /// admin set. With it comes the derived `phone` entry of `providerUserInfo`.
    public var phoneNumber: String?
    public var disabled: Bool
    /// A JSON object as text (`{"admin":true}`), nil when the user has no custom claims.
    public var customAttributes: String?
    public var validSince: Int64
    public var createdAt: Int64
    public var lastLoginAt: Int64?
    public var lastRefreshAt: Int64?
    /// When the password was last set (ms); nil when the user has no password.
    public var passwordUpdatedAt: Int64?
    /// Every sign-in method linked: the `password` entry (derived from email + password,
    /// docs/protocol/accounts.md#the-user-record) and federated providers.
    public var providerUserInfo: [ProviderUserInfo]
    /// The user has signed in with a custom token (docs/protocol/accounts.md#the-user-record `customAuth`);
    /// nil means no.
    public var customAuth: Bool?
    /// The user has signed in with an email link (docs/protocol/accounts.md#the-user-record
    /// `emailLinkSignin`, docs/protocol/accounts.md#accounts-and-providers); nil means no. With an email it
    /// makes the `password` provider entry, with or without a password.
    public var emailLinkSignin: Bool?
    /// The address the user had before its first email change (docs/protocol/accounts.md#the-user-record
    /// `initialEmail`); nil: never changed.
    public var initialEmail: String?
    /// The user's second factors (docs/protocol/mfa.md#the-factors); nil when the reader did not ask
    /// for them or the user has none.
    public var mfaInfo: [MFAEnrollmentInfo]?

    public init(
        tenantId: String?, localId: String, email: String? = nil, emailVerified: Bool = false,
        displayName: String? = nil, photoUrl: String? = nil, disabled: Bool = false,
        customAttributes: String? = nil, validSince: Int64, createdAt: Int64, lastLoginAt: Int64? = nil,
        lastRefreshAt: Int64? = nil, passwordUpdatedAt: Int64? = nil, providerUserInfo: [ProviderUserInfo] = []
    ) {
        self.tenantId = tenantId
        self.localId = localId
        self.email = email
        self.emailVerified = emailVerified
        self.displayName = displayName
        self.photoUrl = photoUrl
        self.phoneNumber = nil
        self.disabled = disabled
        self.customAttributes = customAttributes
        self.validSince = validSince
        self.createdAt = createdAt
        self.lastLoginAt = lastLoginAt
        self.lastRefreshAt = lastRefreshAt
        self.passwordUpdatedAt = passwordUpdatedAt
        self.providerUserInfo = providerUserInfo
    }

    /// Anonymous = no sign-in method (docs/protocol/accounts.md#accounts-and-providers): no provider linked
    /// and never signed in with a custom token. An anonymous user that was given an email without a password
    /// stays anonymous.
    public var isAnonymous: Bool { providerUserInfo.isEmpty && customAuth != true }

    public var hasPassword: Bool { passwordUpdatedAt != nil }
}

public struct ProviderUserInfo: Codable, Sendable, Equatable {
    public var providerId: String
    public var rawId: String
    public var federatedId: String?
    public var email: String?
    public var displayName: String?
    public var photoUrl: String?
    public var screenName: String?
    /// The `phone` entry's number (E.164), derived from the user's own `phoneNumber`.
    public var phoneNumber: String?

    public init(
        providerId: String, rawId: String, federatedId: String? = nil, email: String? = nil,
        displayName: String? = nil, photoUrl: String? = nil, screenName: String? = nil, phoneNumber: String? = nil
    ) {
        self.phoneNumber = phoneNumber
        self.screenName = screenName
        self.providerId = providerId
        self.rawId = rawId
        self.federatedId = federatedId
        self.email = email
        self.displayName = displayName
        self.photoUrl = photoUrl
    }
}

/// The user record on the Firebase wire (docs/protocol/accounts.md#the-user-record): int64 fields as strings,
/// `lastRefreshAt` as RFC 3339, absent fields omitted.
public struct UserInfoWire: Codable, Sendable {
    public var localId: String
    public var email: String?
    public var emailVerified: Bool
    public var displayName: String?
    public var photoUrl: String?
    public var phoneNumber: String?
    public var validSince: String
    public var disabled: Bool
    public var createdAt: String
    public var lastLoginAt: String?
    public var lastRefreshAt: String?
    /// Clients never see a hash: `UkVEQUNURUQ=` ("REDACTED") as production answers
    /// (docs/protocol/accounts.md#the-user-record).
    public var passwordHash: String?
    /// Milliseconds, a JSON number (docs/protocol/accounts.md#the-user-record).
    public var passwordUpdatedAt: Int64?
    public var customAttributes: String?
    public var tenantId: String?
    public var providerUserInfo: [ProviderUserInfo]?
    public var customAuth: Bool?
    public var emailLinkSignin: Bool?
    public var initialEmail: String?
    /// The user's screen name at a provider that has one (Twitter's `screen_name`, GitHub's
    /// `login`): the first linked provider's, as the user record's own output-only field.
    public var screenName: String?
    public var mfaInfo: [MFAEnrollmentInfo]?

    public init(_ user: UserRecord) {
        mfaInfo = user.mfaInfo?.isEmpty == false ? user.mfaInfo : nil
        screenName = user.providerUserInfo.lazy.compactMap(\.screenName).first
        customAuth = user.customAuth == true ? true : nil
        emailLinkSignin = user.emailLinkSignin == true ? true : nil
        initialEmail = user.initialEmail
        localId = user.localId
        email = user.email
        emailVerified = user.emailVerified
        displayName = user.displayName
        photoUrl = user.photoUrl
        phoneNumber = user.phoneNumber
        validSince = String(user.validSince)
        disabled = user.disabled
        createdAt = String(user.createdAt)
        lastLoginAt = user.lastLoginAt.map(String.init)
        lastRefreshAt = user.lastRefreshAt.map(RFC3339.millis(fromEpochMillis:))
        passwordHash = user.hasPassword ? "UkVEQUNURUQ=" : nil
        passwordUpdatedAt = user.passwordUpdatedAt
        customAttributes = user.customAttributes
        tenantId = user.tenantId
        providerUserInfo = user.providerUserInfo.isEmpty ? nil : user.providerUserInfo
    }
}

public enum RFC3339 {
    /// The wall clock in whole milliseconds since the epoch (what `createdAt`, `lastLoginAt` and log
    /// times are made of).
    public static func nowMillis() -> Int64 {
        // Not `clock_gettime`: its `timespec` is owned by CDispatch's clang module here, which a
        // whole-module (release) build refuses under MemberImportVisibility.
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// `2024-01-01T00:00:00.000Z`
    public static func millis(fromEpochMillis millis: Int64) -> String {
        // Whole seconds and milliseconds by integer arithmetic: a Double round-trip can turn .123
        // into .122.
        let (seconds, fraction) = floorDivision(millis, 1000)
        guard let base = civil(seconds) else {
            let whole = Date(timeIntervalSince1970: Double(seconds)).formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
            return String(whole.dropLast()) + "." + String(fraction + 1000).dropFirst() + "Z"
        }
        var text = base
        text.append(UInt8(ascii: "."))
        appendDigits(fraction, width: 3, to: &text)
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    /// `2024-01-01T00:00:00Z`, the fraction of a second dropped.
    public static func seconds(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970.rounded(.down)
        guard interval.magnitude < 1e15, var text = civil(Int64(interval)) else {
            return date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
        }
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    /// `YYYY-MM-DDTHH:MM:SS` in UTC for the years 0000...9999 (nil outside them), by integer
    /// arithmetic: the Gregorian calendar repeats every 400 years (146,097 days); a year is counted
    /// from March so that the leap day falls at its end. Foundation's ISO 8601 format style, which
    /// this replaces on the hot paths (log lines, `lastRefreshAt` of every lookup), costs a
    /// calendar computation per call; the unit tests compare the two.
    static func civil(_ epochSeconds: Int64) -> [UInt8]? {
        let (days, secondOfDay) = floorDivision(epochSeconds, 86_400)
        let shifted = days + 719_468  // days since 0000-03-01
        let (era, dayOfEra) = floorDivision(shifted, 146_097)
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        guard (0...9999).contains(year) else { return nil }
        var text: [UInt8] = []
        text.reserveCapacity(24)
        appendDigits(year, width: 4, to: &text)
        text.append(UInt8(ascii: "-"))
        appendDigits(month, width: 2, to: &text)
        text.append(UInt8(ascii: "-"))
        appendDigits(day, width: 2, to: &text)
        text.append(UInt8(ascii: "T"))
        appendDigits(secondOfDay / 3600, width: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay / 60 % 60, width: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 60, width: 2, to: &text)
        return text
    }

    /// Quotient rounded towards negative infinity, and the remainder that goes with it (0..<divisor).
    /// Cannot overflow, even for `Int64.min`.
    static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    static func appendDigits(_ value: Int64, width: Int, to text: inout [UInt8]) {
        var divisor: Int64 = 1
        for _ in 1..<width { divisor *= 10 }
        while divisor > 0 {
            text.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    public static func parse(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}

/// Response `kind` strings (docs/protocol/README.md#transport-conventions).
public enum Kind {
    public static let signUp = "identitytoolkit#SignupNewUserResponse"
    public static let lookup = "identitytoolkit#GetAccountInfoResponse"
    public static let delete = "identitytoolkit#DeleteAccountResponse"
    public static let signInWithPassword = "identitytoolkit#VerifyPasswordResponse"
    public static let update = "identitytoolkit#SetAccountInfoResponse"
    public static let createAuthUri = "identitytoolkit#CreateAuthUriResponse"
}

/// `accounts:lookup` answer: `users` is omitted when nothing was found.
public struct LookupResponse: Codable, Sendable {
    public var kind: String = Kind.lookup
    public var users: [UserInfoWire]?

    public init(users: [UserRecord]) {
        self.users = users.isEmpty ? nil : users.map(UserInfoWire.init)
    }
}

/// The `accounts:update` answer (docs/protocol/accounts.md#end-user-endpoints): the user as it is now, and
/// fresh tokens when credentials changed. Used by the client and the admin endpoints alike.
public struct SetAccountInfoResponse: Encodable, Sendable {
    public var kind = Kind.update
    public var localId: String
    public var email: String?
    public var emailVerified: Bool
    public var displayName: String?
    public var photoUrl: String?
    public var passwordHash: String?
    public var providerUserInfo: [ProviderUserInfo]
    /// The address the request set: its `email`, or an applied VERIFY_AND_CHANGE_EMAIL code's new one.
    public var newEmail: String?
    public var idToken: String?
    public var refreshToken: String?
    public var expiresIn: String?

    public init(user: UserRecord) {
        localId = user.localId
        email = user.email
        emailVerified = user.emailVerified
        displayName = user.displayName
        photoUrl = user.photoUrl
        passwordHash = user.hasPassword ? "UkVEQUNURUQ=" : nil
        providerUserInfo = user.providerUserInfo
    }
}

public struct DeleteResponse: Codable, Sendable {
    public var kind: String = Kind.delete
    public init() {}
}
