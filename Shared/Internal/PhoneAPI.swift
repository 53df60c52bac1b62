import Foundation

// Phone sign-in through the internal API (docs/protocol/phone.md): the token service passes the
// number as the client typed it; the directory normalizes it, applies the scope's settings and
// limits, keeps the code and queues the SMS.

/// `accounts:sendVerificationCode`: a code for `phoneNumber`.
public struct SendPhoneCodeRequest: Codable, Sendable {
    /// The end user's address (behind trusted proxies), for the limits.
    public var clientIP: String?
    /// Why the app was not verified (docs/protocol/phone.md#app-verification): the refusal, unless the
    /// number is one of the scope's test numbers. Nil: verified, or not asked for.
    public var appRefusal: ErrorCode?
    public var scope: Scope
    public var phoneNumber: String

    public init(scope: Scope, phoneNumber: String) {
        self.scope = scope
        self.phoneNumber = phoneNumber
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, appRefusal, scope = "tenantId", phoneNumber
    }
}

public struct SendPhoneCodeResponse: Codable, Sendable {
    /// What `signInWithPhoneNumber` presents with the code.
    public var sessionInfo: String

    public init(sessionInfo: String) {
        self.sessionInfo = sessionInfo
    }
}

/// `accounts:signInWithPhoneNumber`: the code of `sessionInfo` signs the number's user in (creating it),
/// or with `linkTo` gives the number to a signed-in user.
public struct SignInWithPhoneRequest: Codable, Sendable {
    public var clientIP: String?
    public var scope: Scope
    public var sessionInfo: String
    public var code: String
    public var linkTo: String?
    public var session: NewSession

    public init(scope: Scope, sessionInfo: String, code: String, linkTo: String?, session: NewSession) {
        self.scope = scope
        self.sessionInfo = sessionInfo
        self.code = code
        self.linkTo = linkTo
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, scope = "tenantId", sessionInfo, code, linkTo, session
    }
}
