import Foundation
import HTTPTypes

// The bodies of the directory's internal API (its endpoints are `InternalEndpoints`; authenticated
// with the shared internal secret in the `X-Tessera-Internal` header). Operations are semantic: the
// directory applies the scope's switches and writes everything one operation needs in one
// transaction.

/// The sweep lease a worker holds (docs/protocol/admin.md#anonymous-cleanup): one sweep at a time across
/// every replica. `token` fences a worker that lost it and is the sweep's id.
public struct CleanupLease: Codable, Sendable, Equatable {
    public var holder: String
    public var token: Int64

    public init(holder: String, token: Int64) {
        self.holder = holder
        self.token = token
    }
}

/// The sweep lease's two conflicts, typed at both ends of the internal cleanup API: the directory
/// throws them and the worker matches them, so neither spells the wire's code.
public enum LeaseConflict: String, CaseIterable, Sendable {
    /// Another worker holds the lease: this one skips its sweep.
    case held = "LEASE_HELD"
    /// The lease expired or was taken over during the sweep: nothing more is deleted under it.
    case lost = "LEASE_LOST"
}

extension FirebaseError {
    /// `409 ABORTED` with the conflict's code and `detail`.
    public static func lease(_ conflict: LeaseConflict, _ detail: String) -> FirebaseError {
        FirebaseError(
            status: .conflict, message: "\(conflict.rawValue) : \(detail)", grpcStatus: "ABORTED",
            reason: "conflict")
    }

    /// The lease conflict this error is, read back from the wire; nil for any other error.
    public var leaseConflict: LeaseConflict? { status == .conflict ? LeaseConflict(rawValue: code) : nil }
}

public struct CleanupLeaseRequest: Codable, Sendable {
    public var holder: String
    public var ttlSeconds: Double

    public init(holder: String, ttlSeconds: Double) {
        self.holder = holder
        self.ttlSeconds = ttlSeconds
    }
}

public struct CleanupLeaseResponse: Codable, Sendable {
    public var lease: CleanupLease
    /// Scopes with anonymous accounts due now (on the wire their tenant ids, "" the default scope).
    public var tenants: [Scope]

    public init(lease: CleanupLease, tenants: [Scope]) {
        self.lease = lease
        self.tenants = tenants
    }
}

/// Deletes the next `limit` accounts of one scope that are anonymous and due (oldest due first),
/// ends their sessions and records the batch, in one statement; also extends the lease by
/// `ttlSeconds`.
public struct CleanupDeleteDueRequest: Codable, Sendable {
    public var lease: CleanupLease
    public var ttlSeconds: Double
    public var scope: Scope
    public var limit: Int

    public init(lease: CleanupLease, ttlSeconds: Double, scope: Scope, limit: Int) {
        self.lease = lease
        self.ttlSeconds = ttlSeconds
        self.scope = scope
        self.limit = limit
    }

    enum CodingKeys: String, CodingKey {
        case lease, ttlSeconds, limit
        case scope = "tenantId"
    }
}

public struct CleanupDeleteDueResponse: Codable, Sendable {
    /// Accounts found due (at most `limit`).
    public var due: Int
    /// Accounts deleted: those of `due` still anonymous and due when their row was locked (an
    /// upgrade committed in between keeps its account).
    public var deleted: Int
    /// More accounts of the scope were due beyond `limit`.
    public var more: Bool

    public init(due: Int, deleted: Int, more: Bool) {
        self.due = due
        self.deleted = deleted
        self.more = more
    }
}

/// Prunes what has outlived its use: ended sessions, used or expired codes, delivered mail.
public struct HousekeepingRequest: Codable, Sendable {
    public var lease: CleanupLease
    /// Each batch extends the lease by this much.
    public var ttlSeconds: Double
    /// A session unused this long has ended (the token service's `TESSERA_REFRESH_IDLE_TTL`).
    public var refreshIdleSeconds: Double
    /// How long ended sessions, used or expired codes and delivered mail are kept.
    public var sessionRetentionSeconds: Double
    public var codeRetentionSeconds: Double
    public var mailRetentionSeconds: Double
    public var batchSize: Int
    /// Resume after this scope (the previous call's `resumeAfter`); nil: from the first.
    public var after: Scope?

    public init(
        lease: CleanupLease, ttlSeconds: Double, refreshIdleSeconds: Double, sessionRetentionSeconds: Double,
        codeRetentionSeconds: Double, mailRetentionSeconds: Double, batchSize: Int, after: Scope? = nil
    ) {
        self.after = after
        self.lease = lease
        self.ttlSeconds = ttlSeconds
        self.refreshIdleSeconds = refreshIdleSeconds
        self.sessionRetentionSeconds = sessionRetentionSeconds
        self.codeRetentionSeconds = codeRetentionSeconds
        self.mailRetentionSeconds = mailRetentionSeconds
        self.batchSize = batchSize
    }
}

public struct HousekeepingResponse: Codable, Sendable, Equatable {
    public var sessions: Int
    public var codes: Int
    public var mails: Int
    /// Set when the call stopped at its time budget: call again with `after` = this scope. One call
    /// stays well inside the internal-call timeout however many tenants there are.
    public var resumeAfter: Scope?

    public init(sessions: Int = 0, codes: Int = 0, mails: Int = 0) {
        self.sessions = sessions
        self.codes = codes
        self.mails = mails
    }
}

public struct CleanupFinishRequest: Codable, Sendable {
    public var lease: CleanupLease
    public var deleted: Int

    public init(lease: CleanupLease, deleted: Int) {
        self.lease = lease
        self.deleted = deleted
    }
}

/// The configuration of one identity provider in one scope, for verifying its credentials.
public struct IdpConfigRequest: Codable, Sendable {
    public var scope: Scope
    public var providerId: String

    public init(scope: Scope, providerId: String) {
        self.scope = scope
        self.providerId = providerId
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", providerId
    }
}

public struct IdpConfigResponse: Codable, Sendable {
    public var providerId: String
    public var clientId: String
    /// Facebook's app secret (`appsecret_proof`), Twitter's consumer secret.
    public var clientSecret: String?
    /// OIDC providers of a scope (`oidc.*`): the issuer whose discovery document names the JWKS.
    public var issuer: String?
    /// OIDC providers of a scope: the authorization flow the hosted handler runs with them — the
    /// code flow (`responseType.code`) or the ID token posted back (`responseType.idToken`).
    public var responseCode: Bool?
    /// apple.com's code flow: the client secret is an ES256 JWT signed with this key of this team.
    public var appleCodeFlow: AppleCodeFlow?

    public init(providerId: String, clientId: String, clientSecret: String?, issuer: String?) {
        self.providerId = providerId
        self.clientId = clientId
        self.clientSecret = clientSecret
        self.issuer = issuer
    }
}

/// The Apple Developer team id, the Sign in with Apple key's id and its private key (PKCS#8 PEM, as
/// Apple's `.p8` file holds it): what the client secret of Apple's token endpoint is made from
/// (Identity Platform's `appleSignInConfig.codeFlowConfig`).
public struct AppleCodeFlow: Codable, Sendable, Equatable {
    public var teamId: String
    public var keyId: String
    public var privateKey: String

    public init(teamId: String, keyId: String, privateKey: String) {
        self.teamId = teamId
        self.keyId = keyId
        self.privateKey = privateKey
    }
}

/// A federated sign-in, or (with `linkTo`) the link of a provider to a signed-in user
/// (docs/protocol/federated.md#linking-a-federated-credential, #federated-sign-in,
/// docs/protocol/accounts.md#verified-email-and-automatic-linking). The directory decides, in one
/// transaction, which user it is.
public struct SignInWithIdpRequest: Codable, Sendable {
    /// The end user's IP address (behind trusted proxies), for the rate limits.
    public var clientIP: String?
    public var scope: Scope
    public var identity: FederatedIdentity
    public var linkTo: String?
    public var session: NewSession
    /// false: a re-authentication (`autoCreate: false`), which must never create a user.
    public var autoCreate: Bool?

    public init(scope: Scope, identity: FederatedIdentity, linkTo: String?, session: NewSession) {
        self.scope = scope
        self.identity = identity
        self.linkTo = linkTo
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, scope = "tenantId", identity, linkTo, session, autoCreate
    }
}

public struct SignInWithIdpResponse: Codable, Sendable {
    public enum Outcome: String, Codable, Sendable {
        case signedIn
        /// The email belongs to an account the provider may not take over
        /// (docs/protocol/accounts.md#verified-email-and-automatic-linking): nothing changed.
        case needConfirmation
        /// The user has second factors: no session yet (docs/protocol/mfa.md#signing-in); the
        /// provider is linked all the same.
        case secondFactor
    }

    public var outcome: Outcome
    public var user: UserRecord?
    public var session: SessionInfo?
    public var secondFactor: SecondFactorChallenge?
    public var isNewUser: Bool
    /// The user had this provider with another id (a recycled provider account), now replaced.
    public var emailRecycled: Bool
    /// needConfirmation: the existing account's federated providers.
    public var verifiedProvider: [String]

    public init(
        outcome: Outcome, user: UserRecord?, session: SessionInfo?, isNewUser: Bool = false,
        emailRecycled: Bool = false, verifiedProvider: [String] = []
    ) {
        self.outcome = outcome
        self.user = user
        self.session = session
        self.isNewUser = isNewUser
        self.emailRecycled = emailRecycled
        self.verifiedProvider = verifiedProvider
    }
}

/// `signInWithCustomToken`: the directory holds the service accounts' public keys, so it verifies
/// the token and creates the user on first use (docs/protocol/tokens.md#token-rules, #custom-tokens).
public struct SignInWithCustomTokenRequest: Codable, Sendable {
    /// The end user's IP address (behind trusted proxies), for the rate limits.
    public var clientIP: String?
    public var scope: Scope
    public var token: String
    public var session: NewSession

    public init(scope: Scope, token: String, session: NewSession) {
        self.scope = scope
        self.token = token
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, scope = "tenantId", token, session
    }
}

/// A sign-in that may have created its user: the user, the new session, and whether it is new.
public struct SignedInResponse: Codable, Sendable {
    public var user: UserRecord
    /// As `SessionCreatedResponse.session`.
    public var session: SessionInfo
    public var isNewUser: Bool
    /// As `SessionCreatedResponse.secondFactor`.
    public var secondFactor: SecondFactorChallenge?

    public init(user: UserRecord, session: SessionInfo, isNewUser: Bool) {
        self.user = user
        self.session = session
        self.isNewUser = isNewUser
    }
}

public typealias SignInWithCustomTokenResponse = SignedInResponse

/// `signInWithEmailLink` (docs/protocol/accounts.md#accounts-and-providers, #email-link-sign-in): consumes an
/// EMAIL_SIGNIN code and signs in the address's user, creating it when none has the address, or (with
/// `linkTo`) gives the address to a signed-in user. Either way the address is proven: verified, and a trusted
/// method for docs/protocol/accounts.md#verified-email-and-automatic-linking.
public struct SignInWithEmailLinkRequest: Codable, Sendable {
    /// The end user's IP address (behind trusted proxies), for the rate limits.
    public var clientIP: String?
    public var scope: Scope
    /// Normalised (lower-case).
    public var email: String
    public var oobCode: String
    public var linkTo: String?
    public var session: NewSession
    /// As `ApplyOobCodeRequest.recoverLinkPrefix`, for a `linkTo` user whose address changes.
    public var recoverLinkPrefix: String?

    public init(scope: Scope, email: String, oobCode: String, linkTo: String?, session: NewSession) {
        self.scope = scope
        self.email = email
        self.oobCode = oobCode
        self.linkTo = linkTo
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, scope = "tenantId", email, oobCode, linkTo, session, recoverLinkPrefix
    }
}

public typealias SignInWithEmailLinkResponse = SignedInResponse

/// Asks the directory whether an `Authorization` header is a valid admin credential.
public struct CheckAdminRequest: Codable, Sendable {
    public var authorization: String
    /// The tenant the call acts in (nil: project level); a tenant-scoped credential must match it.
    public var scope: Scope
    /// The end user's address as the token service resolved it: a failed check counts against it.
    public var clientIP: String?

    public init(authorization: String, scope: Scope, clientIP: String?) {
        self.authorization = authorization
        self.scope = scope
        self.clientIP = clientIP
    }

    enum CodingKeys: String, CodingKey {
        case authorization, scope = "tenantId", clientIP
    }
}

/// Out-of-band request types (docs/protocol/accounts.md#end-user-endpoints sendOobCode).
public enum OobRequestType: String, Codable, Sendable {
    case passwordReset = "PASSWORD_RESET"
    case verifyEmail = "VERIFY_EMAIL"
    case verifyAndChangeEmail = "VERIFY_AND_CHANGE_EMAIL"
    /// Email-link (passwordless) sign-in (docs/protocol/accounts.md#accounts-and-providers).
    case emailSignIn = "EMAIL_SIGNIN"
    /// The notice mailed to the old address when a user's email changes; its code restores that
    /// address. Tessera sends it itself: `sendOobCode` refuses it.
    case recoverEmail = "RECOVER_EMAIL"

    /// The request's `requestType`: a name, or the proto enum number Android sends
    /// (docs/protocol/README.md#transport-conventions).
    public static func parse(_ value: JSONValue?) throws -> OobRequestType {
        let name: String
        switch value {
        case .string(let text)?: name = text
        case .int(1)?: name = "PASSWORD_RESET"
        case .int(4)?: name = "VERIFY_EMAIL"
        case .int(6)?: name = "EMAIL_SIGNIN"
        case .int(7)?: name = "VERIFY_AND_CHANGE_EMAIL"
        case nil, .null?: throw FirebaseError.invalid(.missingReqType)
        default: throw FirebaseError.invalidArgument("Invalid value at 'request_type'")
        }
        guard let type = OobRequestType(rawValue: name), type != .recoverEmail else {
            throw FirebaseError.invalidArgument("Invalid value at 'request_type': \(name)")
        }
        return type
    }

    /// The `mode` of the action link.
    public var mode: String {
        switch self {
        case .passwordReset: "resetPassword"
        case .verifyEmail: "verifyEmail"
        case .verifyAndChangeEmail: "verifyAndChangeEmail"
        case .emailSignIn: "signIn"
        case .recoverEmail: "recoverEmail"
        }
    }
}

/// Creates a code and queues its mail in one transaction. `PASSWORD_RESET` names the user by
/// `email`; the others by `localId` (from a verified ID token).
public struct SendOobCodeRequest: Codable, Sendable {
    /// The end user's IP address (behind trusted proxies), for the rate limits.
    public var clientIP: String?
    public var scope: Scope
    public var requestType: OobRequestType
    public var email: String?
    public var localId: String?
    public var newEmail: String?
    /// The action link without its code: the directory appends `&oobCode=<code>`.
    public var linkPrefix: String
    public var continueUrl: String?
    /// Admin `returnOobLink`: answer with the code and link instead of mailing them.
    public var returnLink: Bool = false

    public init(
        scope: Scope, requestType: OobRequestType, email: String?, localId: String?, newEmail: String?,
        linkPrefix: String, continueUrl: String?, returnLink: Bool = false
    ) {
        self.returnLink = returnLink
        self.scope = scope
        self.requestType = requestType
        self.email = email
        self.localId = localId
        self.newEmail = newEmail
        self.linkPrefix = linkPrefix
        self.continueUrl = continueUrl
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, scope = "tenantId", requestType, email, localId, newEmail, linkPrefix, continueUrl, returnLink
    }
}

public struct SendOobCodeResponse: Codable, Sendable {
    /// The address the mail went to; nil when nothing was sent (unknown email under protection).
    public var email: String?
    /// Only for `returnLink`.
    public var oobCode: String?
    public var oobLink: String?

    public init(email: String?, oobCode: String? = nil, oobLink: String? = nil) {
        self.email = email
        self.oobCode = oobCode
        self.oobLink = oobLink
    }
}

public struct ResetPasswordRequest: Codable, Sendable {
    public var scope: Scope
    public var oobCode: String
    /// Without a new password the code's purpose is reported and the code is not consumed.
    public var newPassword: String?

    public init(scope: Scope, oobCode: String, newPassword: String?) {
        self.scope = scope
        self.oobCode = oobCode
        self.newPassword = newPassword
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", oobCode, newPassword
    }
}

public struct OobCodeResponse: Codable, Sendable {
    public var requestType: OobRequestType
    public var email: String
    public var newEmail: String?
    public var user: UserRecord?

    public init(requestType: OobRequestType, email: String, newEmail: String?, user: UserRecord?) {
        self.requestType = requestType
        self.email = email
        self.newEmail = newEmail
        self.user = user
    }
}

public struct ApplyOobCodeRequest: Codable, Sendable {
    public var scope: Scope
    public var oobCode: String
    /// The action link (`mode=recoverEmail`) without its code, for the notice an email change mails
    /// to the old address; nil when none can be built (then a change that needs one is refused).
    public var recoverLinkPrefix: String?

    public init(scope: Scope, oobCode: String, recoverLinkPrefix: String? = nil) {
        self.scope = scope
        self.oobCode = oobCode
        self.recoverLinkPrefix = recoverLinkPrefix
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", oobCode, recoverLinkPrefix
    }
}

/// The first refresh token of a session the operation may create.
public struct NewSession: Codable, Sendable {
    public var refreshTokenHash: String
    /// Absolute end of the session (seconds since the epoch).
    public var expiresAt: Int64

    public init(refreshTokenHash: String, expiresAt: Int64) {
        self.refreshTokenHash = refreshTokenHash
        self.expiresAt = expiresAt
    }
}

/// Email/password sign-up: a new user, or (with `localId`) an existing user, anonymous or not,
/// gaining an email and password and keeping its id.
public struct SignUpPasswordRequest: Codable, Sendable {
    /// The end user's IP address (behind trusted proxies), for the rate limits.
    public var clientIP: String?
    public var scope: Scope
    /// Normalised (lower-case).
    public var email: String
    public var password: String
    public var displayName: String?
    public var localId: String?
    public var session: NewSession
    /// Password sign-ins and sign-ups the token service refused itself since its last such call
    /// (`PasswordGate`), for the hashing pool's count of what is asked of it.
    public var refusedByGate: Int?

    public init(
        scope: Scope, email: String, password: String, displayName: String?, localId: String?, session: NewSession
    ) {
        self.scope = scope
        self.email = email
        self.password = password
        self.displayName = displayName
        self.localId = localId
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, scope = "tenantId", email, password, displayName, localId, session, refusedByGate
    }
}

public struct SignInWithPasswordRequest: Codable, Sendable {
    /// The end user's IP address (behind trusted proxies), for the rate limits.
    public var clientIP: String?
    public var scope: Scope
    public var email: String
    public var password: String
    public var session: NewSession
    /// As in `SignUpPasswordRequest`.
    public var refusedByGate: Int?

    public init(scope: Scope, email: String, password: String, session: NewSession) {
        self.scope = scope
        self.email = email
        self.password = password
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, scope = "tenantId", email, password, session, refusedByGate
    }
}

public struct AuthMethodsRequest: Codable, Sendable {
    public var scope: Scope
    public var email: String

    public init(scope: Scope, email: String) {
        self.scope = scope
        self.email = email
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", email
    }
}

public struct AuthMethodsResponse: Codable, Sendable {
    /// Email enumeration protection is on: nothing about the account may be told.
    public var protected: Bool
    public var registered: Bool
    public var signinMethods: [String]
    public var allProviders: [String]

    public init(protected: Bool, registered: Bool, signinMethods: [String], allProviders: [String]) {
        self.protected = protected
        self.registered = registered
        self.signinMethods = signinMethods
        self.allProviders = allProviders
    }
}

/// An end user's change to its own account (`accounts:update`). When the email or the password
/// changes, every older session is revoked and `session` starts the one the answer's tokens use.
public struct UpdateAccountRequest: Codable, Sendable {
    public var scope: Scope
    public var localId: String
    public var displayName: String?
    public var photoUrl: String?
    /// DISPLAY_NAME, PHOTO_URL, EMAIL, PASSWORD.
    public var deleteAttribute: [String]
    /// Normalised (lower-case).
    public var email: String?
    public var password: String?
    public var deleteProvider: [String]
    /// The sign-in provider of the caller's current session, kept unless a password is set.
    public var currentSignInProvider: String
    public var session: NewSession
    /// The user's `validSince`: end every session and answer a new one, as a credential change does.
    public var revokeSessions: Bool?
    /// As `ApplyOobCodeRequest.recoverLinkPrefix`, for an email change.
    public var recoverLinkPrefix: String?

    public init(
        scope: Scope, localId: String, displayName: String?, photoUrl: String?, deleteAttribute: [String],
        email: String?, password: String?, deleteProvider: [String], currentSignInProvider: String, session: NewSession,
        revokeSessions: Bool = false, recoverLinkPrefix: String? = nil
    ) {
        self.revokeSessions = revokeSessions ? true : nil
        self.recoverLinkPrefix = recoverLinkPrefix
        self.scope = scope
        self.localId = localId
        self.displayName = displayName
        self.photoUrl = photoUrl
        self.deleteAttribute = deleteAttribute
        self.email = email
        self.password = password
        self.deleteProvider = deleteProvider
        self.currentSignInProvider = currentSignInProvider
        self.session = session
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", localId, displayName, photoUrl, deleteAttribute, email, password, deleteProvider,
            currentSignInProvider, session, revokeSessions, recoverLinkPrefix
    }
}

public struct UpdateAccountResponse: Codable, Sendable {
    public var user: UserRecord
    /// Present when credentials changed: the answer carries fresh tokens for this session.
    public var session: SessionInfo?

    public init(user: UserRecord, session: SessionInfo?) {
        self.user = user
        self.session = session
    }
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
    /// A custom token's `claims` (a JSON object as text): part of every ID token of the session.
    public var extraClaims: String?
    /// The second factor the session was signed in with (`totp`, `phone`) and its enrolment: the ID
    /// tokens' `firebase.sign_in_second_factor` and `second_factor_identifier`.
    public var secondFactor: String?
    public var secondFactorId: String?

    public init(
        familyId: String, signInProvider: String, authTime: Int64, tokenIssuedAt: Int64, extraClaims: String? = nil
    ) {
        self.familyId = familyId
        self.signInProvider = signInProvider
        self.authTime = authTime
        self.tokenIssuedAt = tokenIssuedAt
        self.extraClaims = extraClaims
    }
}

public struct SignUpAnonymousRequest: Codable, Sendable {
    /// The end user's IP address (behind trusted proxies), for the rate limits.
    public var clientIP: String?
    public var scope: Scope
    /// Hash of the first refresh token of the new session (`Secrets.tokenHash`).
    public var refreshTokenHash: String
    /// Absolute end of the session (seconds since the epoch).
    public var sessionExpiresAt: Int64

    public init(scope: Scope, refreshTokenHash: String, sessionExpiresAt: Int64) {
        self.scope = scope
        self.refreshTokenHash = refreshTokenHash
        self.sessionExpiresAt = sessionExpiresAt
    }

    enum CodingKeys: String, CodingKey {
        case clientIP, scope = "tenantId", refreshTokenHash, sessionExpiresAt
    }
}

public struct SessionCreatedResponse: Codable, Sendable {
    public var user: UserRecord
    /// With `secondFactor`, no session was started: this names the first factor only (an empty
    /// `familyId`).
    public var session: SessionInfo
    /// A first-factor sign-in of a user with second factors (docs/protocol/mfa.md#signing-in).
    public var secondFactor: SecondFactorChallenge?

    public init(user: UserRecord, session: SessionInfo) {
        self.user = user
        self.session = session
    }
}

public struct AccountRequest: Codable, Sendable {
    public var scope: Scope
    public var localId: String
    /// With an ID token's session and `iat`: whether that session has ended is answered too, when
    /// the token's second is the user's `validSince` (docs/design-notes.md, "Revocation is exact").
    public var session: String?
    public var issuedAt: Int64?
    /// The user's second factors are wanted too (`mfaInfo`: the end user's own lookup).
    public var withFactors: Bool?

    public init(scope: Scope, localId: String, session: String? = nil, issuedAt: Int64? = nil) {
        self.scope = scope
        self.localId = localId
        self.session = session
        self.issuedAt = issuedAt
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", localId, session, issuedAt, withFactors
    }
}

public struct AccountResponse: Codable, Sendable {
    public var user: UserRecord
    /// True when the request's session was revoked (or is gone) and its token's second is `validSince`.
    public var sessionEnded: Bool?

    public init(user: UserRecord, sessionEnded: Bool? = nil) {
        self.user = user
        self.sessionEnded = sessionEnded
    }
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
