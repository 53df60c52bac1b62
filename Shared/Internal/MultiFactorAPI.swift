import Foundation

// Second factors through the internal API (docs/protocol/mfa.md): the token service checks the
// caller's ID token or reads the pending credential, and the directory does the rest.

/// `mfaEnrollment:start` with `totpEnrollmentInfo`: a new seed for the user, sealed into the
/// `sessionInfo` that `finalize` presents.
public struct StartTOTPEnrollmentRequest: Codable, Sendable {
    public var scope: Scope
    public var localId: String

    public init(scope: Scope, localId: String) {
        self.scope = scope
        self.localId = localId
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", localId
    }
}

/// `totpSessionInfo` as the SDKs read it.
public struct TOTPSessionInfo: Codable, Sendable {
    /// The seed in base32, for the authenticator app.
    public var sharedSecretKey: String
    public var verificationCodeLength: Int
    public var hashingAlgorithm: String
    public var periodSec: Int
    public var sessionInfo: String
    /// RFC 3339: the enrolment must be finalized by then.
    public var finalizeEnrollmentTime: String

    public init(
        sharedSecretKey: String, verificationCodeLength: Int, hashingAlgorithm: String, periodSec: Int,
        sessionInfo: String, finalizeEnrollmentTime: String
    ) {
        self.sharedSecretKey = sharedSecretKey
        self.verificationCodeLength = verificationCodeLength
        self.hashingAlgorithm = hashingAlgorithm
        self.periodSec = periodSec
        self.sessionInfo = sessionInfo
        self.finalizeEnrollmentTime = finalizeEnrollmentTime
    }
}

public struct StartTOTPEnrollmentResponse: Codable, Sendable {
    public var totpSessionInfo: TOTPSessionInfo

    public init(totpSessionInfo: TOTPSessionInfo) {
        self.totpSessionInfo = totpSessionInfo
    }
}

/// `mfaEnrollment:finalize` with `totpVerificationInfo`: the first code of the seed enrols it, and
/// the caller gets a new session signed in with it.
public struct FinalizeTOTPEnrollmentRequest: Codable, Sendable {
    public var scope: Scope
    public var localId: String
    /// The first factor of the caller's session, kept by the new one.
    public var signInProvider: String
    public var sessionInfo: String
    public var verificationCode: String
    public var displayName: String?
    public var session: NewSession

    public init(
        scope: Scope, localId: String, signInProvider: String, sessionInfo: String, verificationCode: String,
        displayName: String?, session: NewSession
    ) {
        self.scope = scope
        self.localId = localId
        self.signInProvider = signInProvider
        self.sessionInfo = sessionInfo
        self.verificationCode = verificationCode
        self.displayName = displayName
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", localId, signInProvider, sessionInfo, verificationCode, displayName, session
    }
}

/// `mfaEnrollment:withdraw`: removes a factor, ends the sessions signed in with it, and gives the
/// caller a new session (without that factor when the caller's was signed in with it).
public struct WithdrawMFARequest: Codable, Sendable {
    public var scope: Scope
    public var localId: String
    public var mfaEnrollmentId: String
    /// The caller's session: its first factor and the second factor it was signed in with, if any.
    public var signInProvider: String
    public var secondFactorId: String?
    public var session: NewSession

    public init(
        scope: Scope, localId: String, mfaEnrollmentId: String, signInProvider: String, secondFactorId: String?,
        session: NewSession
    ) {
        self.scope = scope
        self.localId = localId
        self.mfaEnrollmentId = mfaEnrollmentId
        self.signInProvider = signInProvider
        self.secondFactorId = secondFactorId
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", localId, mfaEnrollmentId, signInProvider, secondFactorId, session
    }
}

/// `mfaSignIn:finalize` with `totpVerificationInfo`: the pending sign-in (by its credential's hash)
/// becomes a session when the code of one of the user's TOTP factors matches.
public struct FinalizeMFASignInRequest: Codable, Sendable {
    /// The end user's address (behind trusted proxies), for the logs.
    public var clientIP: String?
    public var scope: Scope
    public var credentialHash: String
    public var mfaEnrollmentId: String
    public var verificationCode: String
    public var session: NewSession

    public init(
        scope: Scope, credentialHash: String, mfaEnrollmentId: String, verificationCode: String, session: NewSession
    ) {
        self.scope = scope
        self.credentialHash = credentialHash
        self.mfaEnrollmentId = mfaEnrollmentId
        self.verificationCode = verificationCode
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, scope = "tenantId", credentialHash, mfaEnrollmentId, verificationCode, session
    }
}

/// `mfaEnrollment:start` with `phoneEnrollmentInfo`: a code texted to the number to enrol.
public struct StartPhoneEnrollmentRequest: Codable, Sendable {
    public var clientIP: String?
    /// Why the app was not verified (docs/protocol/phone.md#app-verification): the refusal, unless the
    /// number is one of the scope's test numbers. Nil: verified, or not asked for.
    public var appRefusal: ErrorCode?
    public var scope: Scope
    public var localId: String
    public var phoneNumber: String

    public init(scope: Scope, localId: String, phoneNumber: String) {
        self.scope = scope
        self.localId = localId
        self.phoneNumber = phoneNumber
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, appRefusal, scope = "tenantId", localId, phoneNumber
    }
}

/// `mfaEnrollment:finalize` with `phoneVerificationInfo`: the texted code enrols its number.
public struct FinalizePhoneEnrollmentRequest: Codable, Sendable {
    public var scope: Scope
    public var localId: String
    public var signInProvider: String
    public var sessionInfo: String
    public var code: String
    public var displayName: String?
    public var session: NewSession

    public init(
        scope: Scope, localId: String, signInProvider: String, sessionInfo: String, code: String,
        displayName: String?, session: NewSession
    ) {
        self.scope = scope
        self.localId = localId
        self.signInProvider = signInProvider
        self.sessionInfo = sessionInfo
        self.code = code
        self.displayName = displayName
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", localId, signInProvider, sessionInfo, code, displayName, session
    }
}

/// `mfaSignIn:start`: a code texted to the number of the pending sign-in's phone factor.
public struct StartPhoneMFASignInRequest: Codable, Sendable {
    public var clientIP: String?
    /// Why the app was not verified (docs/protocol/phone.md#app-verification): the refusal, unless the
    /// number is one of the scope's test numbers. Nil: verified, or not asked for.
    public var appRefusal: ErrorCode?
    public var scope: Scope
    public var credentialHash: String
    public var mfaEnrollmentId: String

    public init(scope: Scope, credentialHash: String, mfaEnrollmentId: String) {
        self.scope = scope
        self.credentialHash = credentialHash
        self.mfaEnrollmentId = mfaEnrollmentId
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, appRefusal, scope = "tenantId", credentialHash, mfaEnrollmentId
    }
}

/// `mfaSignIn:finalize` with `phoneVerificationInfo`: the texted code finishes the pending sign-in.
public struct FinalizePhoneMFASignInRequest: Codable, Sendable {
    public var scope: Scope
    public var credentialHash: String
    public var sessionInfo: String
    public var code: String
    public var session: NewSession

    public init(scope: Scope, credentialHash: String, sessionInfo: String, code: String, session: NewSession) {
        self.scope = scope
        self.credentialHash = credentialHash
        self.sessionInfo = sessionInfo
        self.code = code
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", credentialHash, sessionInfo, code, session
    }
}
