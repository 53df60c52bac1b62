import Foundation
import TesseraShared

/// A scope's phone settings (docs/protocol/phone.md#turning-it-on): whether users sign in with a
/// number, the fictional numbers that get a fixed code and no SMS, and the regions SMS may go to.
/// Stored as JSON (`tenants.phone_config`, migration 25).
public struct PhoneConfig: StoredSettings, Sendable {
    /// Identity Platform's `smsRegionConfig`: one of the two policies.
    public struct SMSRegionConfig: Codable, Sendable, Equatable {
        public struct AllowByDefault: Codable, Sendable, Equatable {
            public var disallowedRegions: [String]?
        }
        public struct AllowlistOnly: Codable, Sendable, Equatable {
            public var allowedRegions: [String]?
        }
        public var allowByDefault: AllowByDefault?
        public var allowlistOnly: AllowlistOnly?

        /// Whether an SMS may go to a number of `region` (ISO 3166 alpha-2).
        func allows(_ region: String) -> Bool {
            if let list = allowlistOnly { return (list.allowedRegions ?? []).contains(region) }
            return !(allowByDefault?.disallowedRegions ?? []).contains(region)
        }
    }

    /// Phone sign-in (`accounts:sendVerificationCode`, `signInWithPhoneNumber`) is on.
    public var enabled: Bool
    /// E.164 → its fixed 6-digit code.
    public var testPhoneNumbers: [String: String]
    public var smsRegionConfig: SMSRegionConfig?

    public static let defaults = PhoneConfig(enabled: false, testPhoneNumbers: [:], smsRegionConfig: nil)
    /// Identity Platform's limit.
    static let maximumTestNumbers = 10

    /// A test number: `+` and 5 to 15 digits, the first not 0 (E.164's form; fictional numbers are
    /// what they are for, so no numbering plan is asked of them).
    static func isTestNumber(_ number: String) -> Bool {
        let digits = number.utf8.dropFirst()
        return number.hasPrefix("+") && (5...15).contains(digits.count) && digits.first != UInt8(ascii: "0")
            && digits.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// Refuses test numbers that are not E.164, codes that are not 6 digits, more than 10 numbers,
    /// both region policies at once, and region codes that are not two capital letters
    /// (`INVALID_CONFIG`, naming the field).
    static func check(testPhoneNumbers: [String: String]?, smsRegionConfig: SMSRegionConfig?, field: String) throws {
        if let numbers = testPhoneNumbers {
            if numbers.count > maximumTestNumbers {
                throw FirebaseError.invalid(.invalidConfig, "\(field) holds more than \(maximumTestNumbers) numbers.")
            }
            for (number, code) in numbers.sorted(by: { $0.key < $1.key }) {
                guard isTestNumber(number) else {
                    throw FirebaseError.invalid(
                        .invalidConfig, "\(field): \(number.prefix(32)) is not a phone number in E.164 form.")
                }
                guard code.utf8.count == 6, code.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                    throw FirebaseError.invalid(.invalidConfig, "\(field): the code of \(number) must be 6 digits.")
                }
            }
        }
        if let regions = smsRegionConfig {
            if regions.allowByDefault != nil, regions.allowlistOnly != nil {
                throw FirebaseError.invalid(
                    .invalidConfig, "smsRegionConfig takes allowByDefault or allowlistOnly, not both.")
            }
            let codes =
                (regions.allowByDefault?.disallowedRegions ?? []) + (regions.allowlistOnly?.allowedRegions ?? [])
            for code in codes
            where code.utf8.count != 2
                || !code.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) })
            {
                throw FirebaseError.invalid(
                    .invalidConfig, "smsRegionConfig: \(code.prefix(16)) is not a region code (ISO 3166, like US).")
            }
        }
    }
}
