import Foundation
import TesseraShared

/// The self-service settings of one scope: a tenant, or the project's default scope.
public struct ScopeSettings: Sendable, Equatable {
    public var scope: Scope
    public var displayName: String
    public var allowPasswordSignup: Bool
    public var enableEmailLinkSignin: Bool
    public var enableAnonymousUser: Bool
    public var disableAuth: Bool
    public var disabledUserSignup: Bool
    public var disabledUserDeletion: Bool
    public var autodeleteAnonymousUsers: Bool
    public var rateLimits: RateLimitSettings = .defaults
    /// The Tenant's `mfaConfig`, the project Config's `mfa` for the default scope.
    public var mfaConfig: MFAConfig = .defaults
    /// Phone sign-in, test numbers and SMS regions (docs/protocol/phone.md#turning-it-on).
    public var phoneConfig: PhoneConfig = .defaults

    public init(
        scope: Scope, displayName: String = "", allowPasswordSignup: Bool = false,
        enableEmailLinkSignin: Bool = false, enableAnonymousUser: Bool = false, disableAuth: Bool = false,
        disabledUserSignup: Bool = false, disabledUserDeletion: Bool = false, autodeleteAnonymousUsers: Bool = false
    ) {
        self.scope = scope
        self.displayName = displayName
        self.allowPasswordSignup = allowPasswordSignup
        self.enableEmailLinkSignin = enableEmailLinkSignin
        self.enableAnonymousUser = enableAnonymousUser
        self.disableAuth = disableAuth
        self.disabledUserSignup = disabledUserSignup
        self.disabledUserDeletion = disabledUserDeletion
        self.autodeleteAnonymousUsers = autodeleteAnonymousUsers
    }
}

/// Settings that exist only at project level and are inherited by every tenant.
public struct ProjectSettings: Sendable, Equatable {
    public var allowDuplicateEmails: Bool
    public var enableImprovedEmailPrivacy: Bool
    /// The project's authorized domains; nil: the deployment's default (`TESSERA_AUTHORIZED_DOMAINS`).
    public var authorizedDomains: [String]?

    public init(
        allowDuplicateEmails: Bool = false, enableImprovedEmailPrivacy: Bool = true, authorizedDomains: [String]? = nil
    ) {
        self.allowDuplicateEmails = allowDuplicateEmails
        self.enableImprovedEmailPrivacy = enableImprovedEmailPrivacy
        self.authorizedDomains = authorizedDomains
    }
}
