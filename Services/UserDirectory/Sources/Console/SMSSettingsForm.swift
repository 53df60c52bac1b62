import Foundation
import TesseraConsole
import TesseraShared

/// The sign-in methods page's text-message form (docs/protocol/phone.md#turning-it-on): a scope's test
/// numbers, one per line as a number and its 6-digit code, and the regions it texts (every one, every one
/// but a list, or only a list). Read into what the admin API's `testPhoneNumbers` and `smsRegionConfig`
/// hold, and checked by the same rules (`PhoneConfig.check`).
enum SMSSettingsForm {
    enum Outcome {
        case accepted(testNumbers: [String: String], regions: PhoneConfig.SMSRegionConfig?)
        /// The form as it was sent, with the error by its field.
        case refused(MethodsPage.SMSForm)
    }

    /// The form showing a scope's settings.
    static func form(_ phone: PhoneConfig) -> MethodsPage.SMSForm {
        let numbers = phone.testPhoneNumbers.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        let policy: String
        let regions: [String]
        if let only = phone.smsRegionConfig?.allowlistOnly {
            (policy, regions) = ("only", only.allowedRegions ?? [])
        } else if let except = phone.smsRegionConfig?.allowByDefault {
            (policy, regions) = ("except", except.disallowedRegions ?? [])
        } else {
            (policy, regions) = ("every", [])
        }
        return MethodsPage.SMSForm(
            testNumbersText: numbers.joined(separator: "\n"), testNumbersError: nil, policy: policy,
            regionsText: regions.joined(separator: " "), regionsError: nil)
    }

    /// The sentence of an `INVALID_CONFIG : …` refusal.
    private static func detail(_ error: FirebaseError) -> String {
        let sentence = error.message.components(separatedBy: " : ").dropFirst().joined(separator: " : ")
        // The API's field name means nothing on this form.
        guard sentence.hasPrefix("smsRegionConfig: ") else { return sentence }
        return String(sentence.dropFirst("smsRegionConfig: ".count)).capitalizingFirst
    }

    static func read(_ fields: [String: String]) -> Outcome {
        let numbersText = fields["testPhoneNumbers"] ?? ""
        let policy = fields["regionPolicy"] ?? "every"
        let regionsText = fields["regions"] ?? ""
        func refused(numbers: String? = nil, regions: String? = nil) -> Outcome {
            .refused(
                MethodsPage.SMSForm(
                    testNumbersText: numbersText, testNumbersError: numbers, policy: policy, regionsText: regionsText,
                    regionsError: regions))
        }

        var testNumbers: [String: String] = [:]
        let lines = numbersText.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        for (index, line) in lines.enumerated() where !line.isEmpty {
            // The code is the last word; the number is the rest, with its spaces and punctuation dropped.
            let words = line.split(whereSeparator: \.isWhitespace)
            guard words.count >= 2, let code = words.last else {
                return refused(
                    numbers: "Line \(index + 1): a number and its 6-digit code, like +1 650-555-0123 123456.")
            }
            let number = words.dropLast().joined().filter { !"-().".contains($0) }
            guard testNumbers.updateValue(String(code), forKey: number) == nil else {
                return refused(numbers: "Line \(index + 1): \(number) is listed twice.")
            }
        }
        do {
            try PhoneConfig.check(testPhoneNumbers: testNumbers, smsRegionConfig: nil, field: "Test numbers")
        } catch let error as FirebaseError {
            return refused(numbers: detail(error))
        } catch {
            return refused(numbers: "These test numbers cannot be saved.")
        }

        let codes = regionsText.split(whereSeparator: { $0.isWhitespace || $0 == "," }).map { $0.uppercased() }
        var regions: PhoneConfig.SMSRegionConfig?
        switch policy {
        case "every":
            regions = nil
        case "except":
            regions = .init(allowByDefault: .init(disallowedRegions: codes))
        case "only":
            guard !codes.isEmpty else { return refused(regions: "Name at least one region to text.") }
            regions = .init(allowlistOnly: .init(allowedRegions: codes))
        default:
            return refused(regions: "Choose which regions are texted.")
        }
        do {
            try PhoneConfig.check(testPhoneNumbers: nil, smsRegionConfig: regions, field: "Regions")
        } catch let error as FirebaseError {
            return refused(regions: detail(error))
        } catch {
            return refused(regions: "These regions cannot be saved.")
        }
        return .accepted(testNumbers: testNumbers, regions: regions)
    }
}
