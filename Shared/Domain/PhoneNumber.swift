import CPhoneNumber

/// A phone number that libphonenumber (Debian's, through Native/CPhoneNumber) parsed and found valid,
/// written in E.164 (docs/design-notes.md#phone-numbers). Only `normalize` makes one.
public struct PhoneNumber: Hashable, Sendable, CustomStringConvertible {
    /// `+`, the country calling code and the national number, at most 15 digits: `+16505551234`.
    public let e164: String
    /// The number's region, ISO 3166 alpha-2 (`US`, `GB`), or `001` for a non-geographic calling code
    /// (`+800`, `+882`…).
    public let region: String

    public var description: String { e164 }

    /// Parses `input` and returns it in E.164 if it is a valid number: libphonenumber's `IsValidNumber`
    /// (the number is one its country assigns), not only a plausible length.
    ///
    /// - Without `defaultRegion` the number must carry its calling code: its first character other than
    ///   white space is `+` (or the full-width `＋`), as the Firebase wire's E.164 has it.
    /// - With `defaultRegion` (ISO 3166 alpha-2, either case: `US`) a number without its calling code
    ///   is taken as that country's (`(650) 555-1234`), and that country's international prefix works
    ///   too (`011 44 …` for `US`). A number with its own `+` keeps its own country.
    /// - Formatting is ignored (spaces, `-`, `.`, `/`, parentheses), and so are digits of other scripts,
    ///   which libphonenumber reads. Letters are refused (`notANumber`) before libphonenumber sees the
    ///   input: it would skip words before a number and read a vanity number's letters as digits, which
    ///   no caller of ours wants. An extension is refused (`hasExtension`): E.164 cannot carry one.
    ///
    /// Safe to call from any number of threads or tasks at once (docs/design-notes.md#phone-numbers).
    public static func normalize(_ input: String, defaultRegion: String? = nil) throws(PhoneNumberError)
        -> PhoneNumber
    {
        var region: String?
        if let defaultRegion {
            let code = defaultRegion.uppercased()
            guard code.utf8.count == 2, code.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) else {
                throw .unknownRegion(defaultRegion)
            }
            region = code
        }
        // Bounded before anything reads the characters (`utf8.count` of a native string costs nothing).
        guard input.utf8.count <= Int(TESSERA_PHONE_MAX_INPUT) else { throw .tooLong }
        guard !input.contains(where: \.isLetter) else { throw .notANumber }
        if region == nil {
            guard let first = input.first(where: { !$0.isWhitespace }) else { throw .notANumber }
            guard first == "+" || first == "＋" else { throw .missingCountryCode }
        }

        var text = input
        var result = tessera_phone_result()
        let status = text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                guard let region else { return tessera_phone_normalize(chars.baseAddress, chars.count, nil, &result) }
                return region.withCString { tessera_phone_normalize(chars.baseAddress, chars.count, $0, &result) }
            }
        }
        switch status {
        case .TESSERA_PHONE_OK:
            let e164 = withUnsafeBytes(of: result.e164) {
                String(decoding: $0.prefix(result.e164_length), as: UTF8.self)
            }
            let region = withUnsafeBytes(of: result.region) {
                String(decoding: $0.prefix(result.region_length), as: UTF8.self)
            }
            return PhoneNumber(e164: e164, region: region)
        case .TESSERA_PHONE_NOT_A_NUMBER: throw .notANumber
        case .TESSERA_PHONE_INVALID_COUNTRY_CODE: throw .invalidCountryCode
        case .TESSERA_PHONE_TOO_SHORT: throw .tooShort
        case .TESSERA_PHONE_TOO_LONG: throw .tooLong
        case .TESSERA_PHONE_INVALID_NUMBER: throw .invalidNumber
        case .TESSERA_PHONE_UNKNOWN_REGION: throw .unknownRegion(defaultRegion ?? "")
        case .TESSERA_PHONE_HAS_EXTENSION: throw .hasExtension
        case .TESSERA_PHONE_FAILED: throw .libraryFailure
        }
    }

    private init(e164: String, region: String) {
        self.e164 = e164
        self.region = region
    }
}

/// Why `PhoneNumber.normalize` refused its input. Every case but `libraryFailure` is the input's fault
/// (the wire's `INVALID_PHONE_NUMBER`); `unknownRegion` is the caller's.
public enum PhoneNumberError: Error, Hashable, Sendable {
    /// Not a phone number: no digits, letters, or characters no number is written with.
    case notANumber
    /// No default region, and the input does not start with `+` and a calling code.
    case missingCountryCode
    /// A calling code no country has (`+999`).
    case invalidCountryCode
    /// Fewer digits than the country's numbers have.
    case tooShort
    /// More digits than the country's numbers have, or an input over 256 bytes.
    case tooLong
    /// A plausible length, but not a number the country assigns (`+1 555 555 0100`: there is no area
    /// code 555).
    case invalidNumber
    /// A valid number with an extension, which E.164 cannot carry.
    case hasExtension
    /// The default region given is not an ISO 3166 alpha-2 code with numbering data (`XX`, `ZZ`, `001`).
    case unknownRegion(String)
    /// libphonenumber failed (out of memory); never the input's fault.
    case libraryFailure
}
