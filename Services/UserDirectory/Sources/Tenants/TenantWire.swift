import Foundation
import TesseraShared

struct PermissionsWire: Codable, Sendable {
    var disabledUserSignup: Bool?
    var disabledUserDeletion: Bool?
}

struct ClientWire: Codable, Sendable {
    var permissions: PermissionsWire?
}

/// Tessera's per-scope abuse limits (issue #7); absent fields keep their current value on create.
struct RateLimitsWire: Codable, Sendable {
    var signUpsPerIpPerHour: Int?
    var passwordSignInsPerAccountPerHour: Int?
    var passwordSignInsPerIpPerHour: Int?
    var oobEmailsPerAccountPerHour: Int?
    var idpSignInsPerIpPerHour: Int?
    var smsPerNumberPerHour: Int?
    var smsPerIpPerHour: Int?
    var smsPerRegionPerHour: Int?
    var smsPerScopePerDay: Int?

    init(_ s: RateLimitSettings) {
        signUpsPerIpPerHour = s.signUpsPerIpPerHour
        passwordSignInsPerAccountPerHour = s.passwordSignInsPerAccountPerHour
        passwordSignInsPerIpPerHour = s.passwordSignInsPerIpPerHour
        oobEmailsPerAccountPerHour = s.oobEmailsPerAccountPerHour
        idpSignInsPerIpPerHour = s.idpSignInsPerIpPerHour
        smsPerNumberPerHour = s.smsPerNumberPerHour
        smsPerIpPerHour = s.smsPerIpPerHour
        smsPerRegionPerHour = s.smsPerRegionPerHour
        smsPerScopePerDay = s.smsPerScopePerDay
    }

    typealias Apply = @Sendable (inout RateLimitSettings, RateLimitsWire?) -> Void

    /// Mask paths under `rateLimits.`; a listed path absent from the body goes back to its default.
    static let fields: [String: Apply] = [
        "signUpsPerIpPerHour": { s, w in
            s.signUpsPerIpPerHour = w?.signUpsPerIpPerHour ?? RateLimitSettings.defaults.signUpsPerIpPerHour
        },
        "passwordSignInsPerAccountPerHour": { s, w in
            s.passwordSignInsPerAccountPerHour =
                w?.passwordSignInsPerAccountPerHour ?? RateLimitSettings.defaults.passwordSignInsPerAccountPerHour
        },
        "passwordSignInsPerIpPerHour": { s, w in
            s.passwordSignInsPerIpPerHour =
                w?.passwordSignInsPerIpPerHour ?? RateLimitSettings.defaults.passwordSignInsPerIpPerHour
        },
        "oobEmailsPerAccountPerHour": { s, w in
            s.oobEmailsPerAccountPerHour =
                w?.oobEmailsPerAccountPerHour ?? RateLimitSettings.defaults.oobEmailsPerAccountPerHour
        },
        "idpSignInsPerIpPerHour": { s, w in
            s.idpSignInsPerIpPerHour = w?.idpSignInsPerIpPerHour ?? RateLimitSettings.defaults.idpSignInsPerIpPerHour
        },
        "smsPerNumberPerHour": { s, w in
            s.smsPerNumberPerHour = w?.smsPerNumberPerHour ?? RateLimitSettings.defaults.smsPerNumberPerHour
        },
        "smsPerIpPerHour": { s, w in
            s.smsPerIpPerHour = w?.smsPerIpPerHour ?? RateLimitSettings.defaults.smsPerIpPerHour
        },
        "smsPerRegionPerHour": { s, w in
            s.smsPerRegionPerHour = w?.smsPerRegionPerHour ?? RateLimitSettings.defaults.smsPerRegionPerHour
        },
        "smsPerScopePerDay": { s, w in
            s.smsPerScopePerDay = w?.smsPerScopePerDay ?? RateLimitSettings.defaults.smsPerScopePerDay
        },
    ]
}

/// The v2 Tenant resource (docs/protocol/admin.md#admin-endpoints, #self-service-settings). Every field is
/// optional on input.
struct TenantWire: Codable, Sendable {
    var name: String?
    var tenantId: String?
    var displayName: String?
    var allowPasswordSignup: Bool?
    var enableEmailLinkSignin: Bool?
    var enableAnonymousUser: Bool?
    var disableAuth: Bool?
    var autodeleteAnonymousUsers: Bool?
    var client: ClientWire?
    var mfaConfig: MFAConfigWire?
    /// Identity Platform's: fictional numbers with fixed codes, and the regions SMS may go to
    /// (docs/protocol/phone.md#turning-it-on).
    var testPhoneNumbers: [String: String]?
    var smsRegionConfig: PhoneConfig.SMSRegionConfig?
    /// Tessera's: phone sign-in on (the project Config's `signIn.phoneNumber.enabled`).
    var enablePhoneSignIn: Bool?
    var rateLimits: RateLimitsWire?
    /// Read-only, for project admins: what this tenant's exported hashes need
    /// (docs/protocol/accounts.md#firebase-scrypt).
    var hashConfig: ProjectConfigWire.HashConfigWire?

    init(_ settings: ScopeSettings, projectID: String) {
        name = "projects/\(projectID)/tenants/\(settings.scope.key)"
        tenantId = settings.scope.tenantID
        // A cleared display name is left out, as Identity Platform leaves out unset fields.
        displayName = settings.displayName.isEmpty ? nil : settings.displayName
        allowPasswordSignup = settings.allowPasswordSignup
        enableEmailLinkSignin = settings.enableEmailLinkSignin
        enableAnonymousUser = settings.enableAnonymousUser
        disableAuth = settings.disableAuth
        autodeleteAnonymousUsers = settings.autodeleteAnonymousUsers
        client = ClientWire(
            permissions: PermissionsWire(
                disabledUserSignup: settings.disabledUserSignup, disabledUserDeletion: settings.disabledUserDeletion))
        mfaConfig = MFAConfigWire(settings.mfaConfig)
        rateLimits = RateLimitsWire(settings.rateLimits)
        enablePhoneSignIn = settings.phoneConfig.enabled
        testPhoneNumbers = settings.phoneConfig.testPhoneNumbers.isEmpty ? nil : settings.phoneConfig.testPhoneNumbers
        smsRegionConfig = settings.phoneConfig.smsRegionConfig
    }

    /// The update-mask paths a Tenant understands, and how each is copied from the input. A path
    /// listed in a mask but absent from the body is reset to its default (AIP-134).
    typealias Apply = @Sendable (inout ScopeSettings, TenantWire) -> Void

    static let fields: [String: Apply] = baseFields.merging(
        RateLimitsWire.fields.map { key, apply in
            let copy: Apply = { s, w in apply(&s.rateLimits, w.rateLimits) }
            return ("rateLimits.\(key)", copy)
        }
            + MFAConfigWire.fields.map { key, apply in
                let copy: Apply = { s, w in apply(&s.mfaConfig, w.mfaConfig) }
                return ("mfaConfig.\(key)", copy)
            }, uniquingKeysWith: { first, _ in first })

    static let baseFields: [String: Apply] = [
        "displayName": { s, w in s.displayName = w.displayName ?? "" },
        "allowPasswordSignup": { s, w in s.allowPasswordSignup = w.allowPasswordSignup ?? false },
        "enableEmailLinkSignin": { s, w in s.enableEmailLinkSignin = w.enableEmailLinkSignin ?? false },
        "enableAnonymousUser": { s, w in s.enableAnonymousUser = w.enableAnonymousUser ?? false },
        "disableAuth": { s, w in s.disableAuth = w.disableAuth ?? false },
        "autodeleteAnonymousUsers": { s, w in s.autodeleteAnonymousUsers = w.autodeleteAnonymousUsers ?? false },
        "client.permissions.disabledUserSignup": { s, w in
            s.disabledUserSignup = w.client?.permissions?.disabledUserSignup ?? false
        },
        "client.permissions.disabledUserDeletion": { s, w in
            s.disabledUserDeletion = w.client?.permissions?.disabledUserDeletion ?? false
        },
        "enablePhoneSignIn": { s, w in s.phoneConfig.enabled = w.enablePhoneSignIn ?? false },
        "testPhoneNumbers": { s, w in s.phoneConfig.testPhoneNumbers = w.testPhoneNumbers ?? [:] },
        "smsRegionConfig": { s, w in s.phoneConfig.smsRegionConfig = w.smsRegionConfig },
    ]
}

/// The v2 project Config resource for the default scope, with Google's field names plus the tenant
/// names `enableAnonymousUser` / `allowPasswordSignup` as aliases, so both resources read alike.
struct ProjectConfigWire: Codable, Sendable {
    struct EmailWire: Codable, Sendable {
        var enabled: Bool?
        var passwordRequired: Bool?
    }
    struct AnonymousWire: Codable, Sendable {
        var enabled: Bool?
    }
    struct HashConfigWire: Codable, Sendable {
        var algorithm: String
        var signerKey: String
        var saltSeparator: String
        var rounds: Int
        var memoryCost: Int
    }
    struct PhoneNumberWire: Codable, Sendable {
        var enabled: Bool?
        var testPhoneNumbers: [String: String]?
    }
    struct SignInWire: Codable, Sendable {
        var email: EmailWire?
        var phoneNumber: PhoneNumberWire?
        var anonymous: AnonymousWire?
        var allowDuplicateEmails: Bool?
        /// Read-only: the parameters exported hashes need (docs/protocol/accounts.md#firebase-scrypt).
        var hashConfig: HashConfigWire?
    }
    struct EmailPrivacyWire: Codable, Sendable {
        var enableImprovedEmailPrivacy: Bool?
    }

    var name: String?
    var signIn: SignInWire?
    var client: ClientWire?
    var emailPrivacyConfig: EmailPrivacyWire?
    var autodeleteAnonymousUsers: Bool?
    var enableAnonymousUser: Bool?
    var allowPasswordSignup: Bool?
    /// The tenant name of Google's `signIn.email.passwordRequired: false` (email-link sign-in,
    /// docs/protocol/accounts.md#accounts-and-providers).
    var enableEmailLinkSignin: Bool?
    /// Tessera's: the default scope's switch that tenants have too (docs/protocol/admin.md#self-service-settings).
    var disableAuth: Bool?
    var rateLimits: RateLimitsWire?
    /// Identity Platform's `mfa`: the default scope's multi-factor settings, as a tenant's `mfaConfig`.
    var mfa: MFAConfigWire?
    var smsRegionConfig: PhoneConfig.SMSRegionConfig?
    /// Tessera's alias of `signIn.phoneNumber.enabled`, the tenants' name.
    var enablePhoneSignIn: Bool?
    /// Firebase's: the hosts (and their subdomains) a `continueUrl`, the hosted handler's
    /// `redirectUrl` and an identity-provider sign-in's `continueUri` may point to (docs/oauth-flows.md §2).
    /// Until set, the deployment's `TESSERA_AUTHORIZED_DOMAINS`.
    var authorizedDomains: [String]?

    init(
        scope: ScopeSettings, project: ProjectSettings, projectID: String, hashConfig: HashConfigWire?,
        defaultDomains: [String]
    ) {
        authorizedDomains = project.authorizedDomains ?? defaultDomains
        rateLimits = RateLimitsWire(scope.rateLimits)
        mfa = MFAConfigWire(scope.mfaConfig)
        name = "projects/\(projectID)/config"
        signIn = SignInWire(
            email: EmailWire(enabled: scope.allowPasswordSignup, passwordRequired: !scope.enableEmailLinkSignin),
            phoneNumber: PhoneNumberWire(
                enabled: scope.phoneConfig.enabled,
                testPhoneNumbers: scope.phoneConfig.testPhoneNumbers.isEmpty ? nil : scope.phoneConfig.testPhoneNumbers),
            anonymous: AnonymousWire(enabled: scope.enableAnonymousUser),
            allowDuplicateEmails: project.allowDuplicateEmails, hashConfig: hashConfig)
        client = ClientWire(
            permissions: PermissionsWire(
                disabledUserSignup: scope.disabledUserSignup, disabledUserDeletion: scope.disabledUserDeletion))
        emailPrivacyConfig = EmailPrivacyWire(enableImprovedEmailPrivacy: project.enableImprovedEmailPrivacy)
        autodeleteAnonymousUsers = scope.autodeleteAnonymousUsers
        enableAnonymousUser = scope.enableAnonymousUser
        allowPasswordSignup = scope.allowPasswordSignup
        enableEmailLinkSignin = scope.enableEmailLinkSignin
        disableAuth = scope.disableAuth
        smsRegionConfig = scope.phoneConfig.smsRegionConfig
        enablePhoneSignIn = scope.phoneConfig.enabled
    }

    typealias Apply = @Sendable (inout ScopeSettings, inout ProjectSettings, ProjectConfigWire) -> Void

    static let fields: [String: Apply] = baseFields.merging(
        RateLimitsWire.fields.map { key, apply in
            let copy: Apply = { s, _, w in apply(&s.rateLimits, w.rateLimits) }
            return ("rateLimits.\(key)", copy)
        }
            + MFAConfigWire.fields.map { key, apply in
                let copy: Apply = { s, _, w in apply(&s.mfaConfig, w.mfa) }
                return ("mfa.\(key)", copy)
            }, uniquingKeysWith: { first, _ in first })

    static let baseFields: [String: Apply] = [
        "signIn.email.enabled": { s, _, w in
            s.allowPasswordSignup = w.signIn?.email?.enabled ?? w.allowPasswordSignup ?? false
        },
        // Google's switch for email-link sign-in: a password is not required when links may sign in.
        "signIn.email.passwordRequired": { s, _, w in
            s.enableEmailLinkSignin = !(w.signIn?.email?.passwordRequired ?? !(w.enableEmailLinkSignin ?? false))
        },
        "enableEmailLinkSignin": { s, _, w in
            s.enableEmailLinkSignin =
                w.enableEmailLinkSignin ?? w.signIn?.email?.passwordRequired.map { !$0 } ?? false
        },
        "allowPasswordSignup": { s, _, w in
            s.allowPasswordSignup = w.allowPasswordSignup ?? w.signIn?.email?.enabled ?? false
        },
        "signIn.anonymous.enabled": { s, _, w in
            s.enableAnonymousUser = w.signIn?.anonymous?.enabled ?? w.enableAnonymousUser ?? false
        },
        "enableAnonymousUser": { s, _, w in
            s.enableAnonymousUser = w.enableAnonymousUser ?? w.signIn?.anonymous?.enabled ?? false
        },
        "signIn.allowDuplicateEmails": { _, p, w in p.allowDuplicateEmails = w.signIn?.allowDuplicateEmails ?? false },
        "client.permissions.disabledUserSignup": { s, _, w in
            s.disabledUserSignup = w.client?.permissions?.disabledUserSignup ?? false
        },
        "client.permissions.disabledUserDeletion": { s, _, w in
            s.disabledUserDeletion = w.client?.permissions?.disabledUserDeletion ?? false
        },
        "emailPrivacyConfig.enableImprovedEmailPrivacy": { _, p, w in
            p.enableImprovedEmailPrivacy = w.emailPrivacyConfig?.enableImprovedEmailPrivacy ?? false
        },
        "autodeleteAnonymousUsers": { s, _, w in s.autodeleteAnonymousUsers = w.autodeleteAnonymousUsers ?? false },
        "disableAuth": { s, _, w in s.disableAuth = w.disableAuth ?? false },
        "signIn.phoneNumber.enabled": { s, _, w in
            s.phoneConfig.enabled = w.signIn?.phoneNumber?.enabled ?? w.enablePhoneSignIn ?? false
        },
        "enablePhoneSignIn": { s, _, w in
            s.phoneConfig.enabled = w.enablePhoneSignIn ?? w.signIn?.phoneNumber?.enabled ?? false
        },
        "signIn.phoneNumber.testPhoneNumbers": { s, _, w in
            s.phoneConfig.testPhoneNumbers = w.signIn?.phoneNumber?.testPhoneNumbers ?? [:]
        },
        "smsRegionConfig": { s, _, w in s.phoneConfig.smsRegionConfig = w.smsRegionConfig },
        // Absent from a body whose mask names it: back to the deployment's default.
        "authorizedDomains": { _, p, w in p.authorizedDomains = w.authorizedDomains },
    ]

    /// Each authorized domain normalized (`ActionLinks.normalizedDomain`), duplicates dropped.
    static func checkDomains(_ domains: [String]) throws -> [String] {
        guard domains.count <= 200 else {
            throw FirebaseError.invalid(.invalidConfig, "authorizedDomains holds more than 200 domains.")
        }
        var result: [String] = []
        for raw in domains {
            guard let domain = ActionLinks.normalizedDomain(raw) else {
                throw FirebaseError.invalid(
                    .invalidConfig,
                    "authorizedDomains holds an invalid domain: \(raw.prefix(100)) (a host, or host:port)")
            }
            if !result.contains(domain) { result.append(domain) }
        }
        return result
    }
}

enum UpdateMask {
    /// Expands a comma-separated mask into known leaf paths: a listed parent (`client.permissions`,
    /// `signIn`) stands for every leaf under it. Unknown paths are an error, or, with
    /// `ignoringUnknown` (Tenants and the Config, as the Firebase emulator's specs have it:
    /// docs/design-notes.md, "Tenants and settings"), change nothing: a field the resource does not
    /// have, or a path inside a leaf (`displayName.0`, `mfaConfig.enabledProviders.x`).
    static func resolve(_ mask: String, known: some Collection<String>, ignoringUnknown: Bool = false) throws
        -> [String]
    {
        var paths: [String] = []
        for raw in mask.split(separator: ",") {
            let path = raw.trimmingCharacters(in: .whitespaces)
            if path.isEmpty { continue }
            let matches = known.filter { $0 == path || $0.hasPrefix(path + ".") }
            if matches.isEmpty && ignoringUnknown { continue }
            guard !matches.isEmpty else {
                throw FirebaseError.invalidArgument("INVALID_ARGUMENT : Unknown field in updateMask: \(path)")
            }
            paths.append(contentsOf: matches.sorted())
        }
        return paths
    }
}
