import Foundation
import TesseraShared

/// A scope's multi-factor settings: Identity Platform's `MultiFactorAuthConfig`, the Tenant's
/// `mfaConfig` and the project Config's `mfa`. Stored as given (docs/design-notes.md, "Tenants and
/// settings"); which factors it turns on is docs/protocol/mfa.md#turning-it-on.
public struct MFAConfig: StoredSettings, Sendable {
    public struct TOTPProviderConfig: Codable, Sendable, Equatable {
        public var adjacentIntervals: Int?
    }

    /// One entry of `providerConfigs` (TOTP; phone is `enabledProviders`).
    public struct ProviderConfig: Codable, Sendable, Equatable {
        public var state: String?
        public var totpProviderConfig: TOTPProviderConfig?
    }

    public var state: String
    public var enabledProviders: [String]
    public var providerConfigs: [ProviderConfig]?

    /// What a scope has until an admin sets it, and what an absent `state` or `enabledProviders` becomes.
    public static let defaultState = "DISABLED"
    public static let defaults = MFAConfig(state: defaultState, enabledProviders: [], providerConfigs: nil)

    static let states: Set<String> = ["STATE_UNSPECIFIED", "DISABLED", "ENABLED", "MANDATORY"]
    static let providers: Set<String> = ["PROVIDER_UNSPECIFIED", "PHONE_SMS"]
    static let providerStates: Set<String> = ["MFA_STATE_UNSPECIFIED", "DISABLED", "ENABLED", "MANDATORY"]
    static let adjacentIntervals = 0...10

}

/// `mfaConfig` / `mfa` on the wire: every field optional on input, `state` and `enabledProviders`
/// always present on output.
struct MFAConfigWire: Codable, Sendable {
    var state: String?
    var enabledProviders: [String]?
    var providerConfigs: [MFAConfig.ProviderConfig]?

    init(_ config: MFAConfig) {
        state = config.state
        enabledProviders = config.enabledProviders
        providerConfigs = config.providerConfigs
    }

    typealias Apply = @Sendable (inout MFAConfig, MFAConfigWire?) -> Void

    /// Mask paths under `mfaConfig.` (a Tenant) or `mfa.` (the Config); a listed path absent from
    /// the body goes back to its default. `providerConfigs` is a list, replaced as a whole.
    static let fields: [String: Apply] = [
        "state": { c, w in c.state = w?.state ?? MFAConfig.defaultState },
        "enabledProviders": { c, w in c.enabledProviders = w?.enabledProviders ?? [] },
        "providerConfigs": { c, w in c.providerConfigs = w?.providerConfigs },
    ]

    /// Refuses values outside the enums, as Google's JSON parser does (`INVALID_ARGUMENT`), and a
    /// TOTP window outside 0–10 (`INVALID_CONFIG`). `field` is the wire name, for the message.
    static func check(_ wire: MFAConfigWire?, field: String) throws {
        guard let wire else { return }
        func refuse(_ path: String, _ value: String) -> FirebaseError {
            FirebaseError.invalidJSON("Invalid value at '\(field).\(path)': \"\(value.prefix(64))\".")
        }
        if let state = wire.state, !MFAConfig.states.contains(state) { throw refuse("state", state) }
        for (index, provider) in (wire.enabledProviders ?? []).enumerated()
        where !MFAConfig.providers.contains(provider) {
            throw refuse("enabledProviders[\(index)]", provider)
        }
        for (index, config) in (wire.providerConfigs ?? []).enumerated() {
            if let state = config.state, !MFAConfig.providerStates.contains(state) {
                throw refuse("providerConfigs[\(index)].state", state)
            }
            if let intervals = config.totpProviderConfig?.adjacentIntervals,
                !MFAConfig.adjacentIntervals.contains(intervals)
            {
                throw FirebaseError.invalid(
                    .invalidConfig,
                    "\(field).providerConfigs[\(index)].totpProviderConfig.adjacentIntervals must be between 0 and 10.")
            }
        }
    }
}

extension MFAConfig {
    private static let onStates: Set<String> = ["ENABLED", "MANDATORY"]

    /// SMS second factors: the scope's `state` is on and lists `PHONE_SMS`.
    var enablesPhone: Bool { Self.onStates.contains(state) && enabledProviders.contains("PHONE_SMS") }

    /// The TOTP entry of `providerConfigs`, if any.
    var totpConfig: ProviderConfig? { providerConfigs?.first { $0.totpProviderConfig != nil } }

    /// TOTP second factors: the scope's TOTP provider config is on (Identity Platform turns TOTP on
    /// through `providerConfigs` alone, whatever the top-level `state`).
    var enablesTOTP: Bool { Self.onStates.contains(totpConfig?.state ?? "") }

    /// Every first-factor sign-in must be finished with a second factor; users without one cannot sign
    /// in, nor can end users create accounts (docs/protocol/mfa.md#mandatory).
    var isMandatory: Bool { state == "MANDATORY" }

    /// The refusal of a user without a factor where factors are mandatory (`MFA_ENROLLMENT_NOT_FOUND`).
    static let noFactorMessage = "Multi-factor authentication is mandatory here, and the user has no second factor."

    /// How many 30-second steps on each side of now a TOTP code may be from (5 when unset).
    var totpAdjacentIntervals: Int { totpConfig?.totpProviderConfig?.adjacentIntervals ?? 5 }

    /// Whether factors of this kind are asked for at sign-in and may be enrolled.
    func enables(_ factor: MultiFactorEnrollment.Factor) -> Bool {
        switch factor {
        case .totp: enablesTOTP
        case .phone: enablesPhone
        }
    }
}
