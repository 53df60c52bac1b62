import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// The directory's account use cases (issue #24): one service per flow, each holding only what it
/// uses (the PostgreSQL client, the hasher and the hash keys, the retention, the code TTL), and each
/// deciding its flow's policy (scope switches, rate limits, hashing, email privacy) over statements
/// that bind the scope. Statements two flows share are `AccountRows`.
public struct Accounts: Sendable {
    let sessions: SessionAccounts
    let passwords: PasswordAccounts
    let oob: OobAccounts
    let federated: FederatedAccounts
    let emailLinks: EmailLinkAccounts
    let customTokens: CustomTokenAccounts
    let multiFactor: MultiFactorAccounts
    let phone: PhoneAccounts
    public let admin: AdminUsers

    public init(
        client: Database, anonymousRetention: Duration, hasher: PasswordHasher,
        oobCodeTTL: Duration = .seconds(3600), mfaKeys: [[UInt8]] = [], metrics: ServiceMetrics? = nil
    ) {
        // One cache of the hash keys for every flow that hashes.
        let hashKey = HashKeyStore()
        sessions = SessionAccounts(
            client: client, anonymousRetention: anonymousRetention,
            reuse: metrics?.counter(
                "refresh_token_reuse",
                help: "Refresh tokens presented again after their rotation's grace window: each revoked its session."))
        passwords = PasswordAccounts(client: client, hasher: hasher, hashKey: hashKey, oobCodeTTL: oobCodeTTL)
        oob = OobAccounts(
            client: client, hasher: hasher, hashKey: hashKey, oobCodeTTL: oobCodeTTL,
            detachedWork: DetachedWork(limit: 256))
        federated = FederatedAccounts(client: client)
        emailLinks = EmailLinkAccounts(client: client, oobCodeTTL: oobCodeTTL)
        customTokens = CustomTokenAccounts(client: client)
        multiFactor = MultiFactorAccounts(client: client, sealer: SecretSealer(keys: mfaKeys))
        phone = PhoneAccounts(
            client: client,
            budgetRefusals: metrics?.counter(
                "sms_budget_refusals",
                help: "SMS codes refused because a scope spent its daily SMS budget (rateLimits.smsPerScopePerDay)."))
        admin = AdminUsers(client: client, hasher: hasher, hashKey: hashKey)
    }
}

/// What an admin may change with `accounts:update` (docs/protocol/admin.md#admin-endpoints). Admin calls
/// ignore the self-service switches and work on disabled users.
public struct AdminUserChange: Sendable {
    public var disabled: Bool?
    public var emailVerified: Bool?
    /// Seconds; tokens issued before it are refused.
    public var validSince: Int64?
    public var displayName: String?
    public var photoUrl: String?
    public var deleteDisplayName = false
    public var deletePhotoUrl = false
    /// Normalised.
    public var email: String?
    public var deleteEmail = false
    public var password: String?
    public var phoneNumber: String?
    public var deletePhoneNumber = false
    /// Validated claims text; `.some(nil)` clears them.
    public var customAttributes: String??
    /// Federated providers to unlink (`password` and `phone` are handled by their own fields).
    public var deleteProviders: [String] = []
    /// A provider identity to link (`linkProviderUserInfo`), replacing the user's link of that
    /// provider; another user's identity is `FEDERATED_USER_ID_ALREADY_LINKED`.
    public var linkProvider: FederatedIdentity?
    /// `mfa` (docs/protocol/mfa.md#admins): the user's second factors from now on, those it has named by
    /// id and new phone factors; the others are removed. Nil: untouched.
    public var factors: [AdminFactor]?

    public init() {}
}
