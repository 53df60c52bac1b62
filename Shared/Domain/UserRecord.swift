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
    /// E.164 (`+15555550100`); an attribute admins set (phone sign-in is out of scope, A.1).
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
    /// Every sign-in method linked: the `password` entry (derived from email + password, B.6) and
    /// federated providers.
    public var providerUserInfo: [ProviderUserInfo]
    /// The user has signed in with a custom token (B.6 `customAuth`); nil means no.
    public var customAuth: Bool?

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

    /// Anonymous = no sign-in method (API.md A.3): no provider linked and never signed in with a
    /// custom token. An anonymous user that was given an email without a password stays anonymous.
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

    public init(
        providerId: String, rawId: String, federatedId: String? = nil, email: String? = nil,
        displayName: String? = nil, photoUrl: String? = nil, screenName: String? = nil
    ) {
        self.screenName = screenName
        self.providerId = providerId
        self.rawId = rawId
        self.federatedId = federatedId
        self.email = email
        self.displayName = displayName
        self.photoUrl = photoUrl
    }
}

/// The user record on the Firebase wire (API.md B.6): int64 fields as strings, `lastRefreshAt` as
/// RFC 3339, absent fields omitted.
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
    /// Clients never see a hash: `UkVEQUNURUQ=` ("REDACTED") as production answers (B.6).
    public var passwordHash: String?
    /// Milliseconds, a JSON number (B.6).
    public var passwordUpdatedAt: Int64?
    public var customAttributes: String?
    public var tenantId: String?
    public var providerUserInfo: [ProviderUserInfo]?
    public var customAuth: Bool?

    public init(_ user: UserRecord) {
        customAuth = user.customAuth == true ? true : nil
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
    /// `2024-01-01T00:00:00.000Z`
    public static func millis(fromEpochMillis millis: Int64) -> String {
        // Whole seconds through the formatter, milliseconds by integer arithmetic: a Double
        // round-trip can turn .123 into .122.
        let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
        let fraction = millis - seconds * 1000
        let base = Date(timeIntervalSince1970: Double(seconds)).formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
        return String(base.dropLast()) + "." + String(fraction + 1000).dropFirst() + "Z"
    }

    public static func seconds(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
    }

    public static func parse(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}

/// Response `kind` strings (API.md B.0).
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

/// The `accounts:update` answer (B.2.1): the user as it is now, and fresh tokens when credentials
/// changed. Used by the client and the admin endpoints alike.
public struct SetAccountInfoResponse: Encodable, Sendable {
    public var kind = Kind.update
    public var localId: String
    public var email: String?
    public var emailVerified: Bool
    public var displayName: String?
    public var photoUrl: String?
    public var passwordHash: String?
    public var providerUserInfo: [ProviderUserInfo]
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
