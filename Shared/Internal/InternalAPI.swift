import Foundation

/// Paths and bodies of the directory's internal API (authenticated with the shared internal secret
/// in the `X-Tessera-Internal` header). Operations are semantic: the directory applies the scope's
/// switches and writes everything one operation needs in one transaction.
public enum InternalPath {
    public static let status = "/internal/v1/status"
    public static let signUpAnonymous = "/internal/v1/accounts:signUpAnonymous"
    public static let getAccount = "/internal/v1/accounts:get"
    public static let deleteAccount = "/internal/v1/accounts:delete"
    public static let rotateRefreshToken = "/internal/v1/refreshTokens:rotate"
}

/// A sign-in session (refresh-token family) as the token service needs it to mint tokens.
public struct SessionInfo: Codable, Sendable, Equatable {
    public var familyId: String
    public var signInProvider: String
    /// When the user signed in to this session (seconds): the `auth_time` claim.
    public var authTime: Int64
    /// `iat` of the ID token that goes with the refresh token (seconds); a grace retry re-mints the
    /// same ID token from it.
    public var tokenIssuedAt: Int64

    public init(familyId: String, signInProvider: String, authTime: Int64, tokenIssuedAt: Int64) {
        self.familyId = familyId
        self.signInProvider = signInProvider
        self.authTime = authTime
        self.tokenIssuedAt = tokenIssuedAt
    }
}

public struct SignUpAnonymousRequest: Codable, Sendable {
    public var tenantId: String?
    /// Hash of the first refresh token of the new session (`Secrets.tokenHash`).
    public var refreshTokenHash: String
    /// Absolute end of the session (seconds since the epoch).
    public var sessionExpiresAt: Int64

    public init(tenantId: String?, refreshTokenHash: String, sessionExpiresAt: Int64) {
        self.tenantId = tenantId
        self.refreshTokenHash = refreshTokenHash
        self.sessionExpiresAt = sessionExpiresAt
    }
}

public struct SessionCreatedResponse: Codable, Sendable {
    public var user: UserRecord
    public var session: SessionInfo

    public init(user: UserRecord, session: SessionInfo) {
        self.user = user
        self.session = session
    }
}

public struct AccountRequest: Codable, Sendable {
    public var tenantId: String?
    public var localId: String

    public init(tenantId: String?, localId: String) {
        self.tenantId = tenantId
        self.localId = localId
    }
}

public struct AccountResponse: Codable, Sendable {
    public var user: UserRecord
    public init(user: UserRecord) { self.user = user }
}

public struct RotateRefreshTokenRequest: Codable, Sendable {
    public var tokenHash: String
    public var newTokenHash: String
    /// The new refresh token sealed with a key derived from the presented one: only a caller that
    /// holds the old token can open it, so a grace retry can be answered with the same new token
    /// while the database holds nothing that reveals it.
    public var sealedSuccessor: String
    public var graceSeconds: Int64
    public var idleSeconds: Int64

    public init(
        tokenHash: String, newTokenHash: String, sealedSuccessor: String, graceSeconds: Int64, idleSeconds: Int64
    ) {
        self.tokenHash = tokenHash
        self.newTokenHash = newTokenHash
        self.sealedSuccessor = sealedSuccessor
        self.graceSeconds = graceSeconds
        self.idleSeconds = idleSeconds
    }
}

public struct RotateRefreshTokenResponse: Codable, Sendable {
    public enum Outcome: String, Codable, Sendable {
        /// The presented token was current: it is now used and `newTokenHash` is current.
        case rotated
        /// The presented token was rotated moments ago (inside the grace window): answer with its
        /// successor, `sealedSuccessor`.
        case replayed
    }

    public var outcome: Outcome
    public var user: UserRecord
    public var session: SessionInfo
    public var sealedSuccessor: String?

    public init(outcome: Outcome, user: UserRecord, session: SessionInfo, sealedSuccessor: String?) {
        self.outcome = outcome
        self.user = user
        self.session = session
        self.sealedSuccessor = sealedSuccessor
    }
}

public struct DirectoryStatus: Codable, Sendable {
    public var service: String
    public var schemaVersion: Int

    public init(service: String, schemaVersion: Int) {
        self.service = service
        self.schemaVersion = schemaVersion
    }
}
