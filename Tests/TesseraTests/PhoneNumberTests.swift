import Testing

@testable import TesseraShared

@Suite("Phone numbers: E.164 by libphonenumber (docs/design-notes.md#phone-numbers)")
struct PhoneNumberTests {
    /// The outcome of one input, comparable in a table.
    static func outcome(_ input: String, _ region: String? = nil) -> Result<String, PhoneNumberError> {
        Result { () throws(PhoneNumberError) in
            let number = try PhoneNumber.normalize(input, defaultRegion: region)
            return "\(number.e164) \(number.region)"
        }
    }

    @Test("numbers with their calling code, formatted in any usual way, without a default region")
    func international() {
        let cases = [
            ("+1 650-555-1234", "+16505551234 US"), ("+16505551234", "+16505551234 US"),
            ("+1 (650) 555-1234", "+16505551234 US"), ("+1.650.555.1234", "+16505551234 US"),
            ("  +1 650 555 1234 ", "+16505551234 US"), ("＋1 650 555 1234", "+16505551234 US"),
            ("+44 20 7946 0018", "+442079460018 GB"), ("+4420 7946 0018", "+442079460018 GB"),
            ("+44 (0)20 7946 0018", "+442079460018 GB"), ("+٤٤ ٢٠ ٧٩٤٦ ٠٠١٨", "+442079460018 GB"),
            ("+33 6 12 34 56 78", "+33612345678 FR"), ("+49 30 123456", "+4930123456 DE"),
            // Italy keeps the national number's leading zero in E.164.
            ("+39 06 1234 5678", "+390612345678 IT"), ("+61 491 570 156", "+61491570156 AU"),
            // A non-geographic calling code (international freephone) has region 001.
            ("+800 1234 5678", "+80012345678 001"),
        ]
        for (input, expected) in cases {
            #expect(Self.outcome(input) == .success(expected), "\(input)")
        }
    }

    @Test("a default region reads national numbers and that country's international prefix")
    func withDefaultRegion() {
        let cases = [
            ("(650) 555-1234", "US", "+16505551234 US"), ("650 555 1234", "us", "+16505551234 US"),
            ("1 650 555 1234", "US", "+16505551234 US"), ("011 44 20 7946 0018", "US", "+442079460018 GB"),
            ("020 7946 0018", "GB", "+442079460018 GB"), ("00 44 20 7946 0018", "FR", "+442079460018 GB"),
            // A number with its own calling code keeps its country, whatever the default.
            ("+44 20 7946 0018", "US", "+442079460018 GB"), ("+1 650 555 1234", "GB", "+16505551234 US"),
        ]
        for (input, region, expected) in cases {
            #expect(Self.outcome(input, region) == .success(expected), "\(input) in \(region)")
        }
    }

    @Test("garbage, wrong lengths and numbers no country assigns are refused, each for its reason")
    func refused() {
        let cases: [(String, String?, PhoneNumberError)] = [
            ("garbage", nil, .notANumber), ("garbage", "US", .notANumber), ("", "US", .notANumber),
            ("", nil, .notANumber), (" ", nil, .notANumber), ("+", nil, .notANumber), ("+1", nil, .notANumber),
            ("+1\t650\n555 1234", nil, .notANumber),
            // Letters are refused before libphonenumber, which would skip the words or read them as digits.
            ("call +1 650 555 1234", nil, .notANumber), ("garbage +1 650 555 1234", nil, .notANumber),
            ("+1 800 FLOWERS", nil, .notANumber), ("+1 650 555 12a34", nil, .notANumber),
            ("tel:+1-650-555-1234", nil, .notANumber), ("+1 650 555 1234 ext. 5", nil, .notANumber),
            ("+1 650 555 1234\0", nil, .notANumber),
            // Without a default region the calling code is required.
            ("(650) 555-1234", nil, .missingCountryCode),
            ("16505551234", nil, .missingCountryCode), ("0044 20 7946 0018", nil, .missingCountryCode),
            ("+999 123456", nil, .invalidCountryCode), ("+999 123456", "US", .invalidCountryCode),
            ("+1 650 555 123", nil, .tooShort), ("12", "US", .tooShort), ("011", "US", .tooShort),
            ("+1 650 555 12345", nil, .tooLong), ("+1 2345678901234567890", nil, .tooLong),
            (String(repeating: "1", count: 257), "US", .tooLong),
            // The right length, but no such area code (555) or no such range (UK drama numbers).
            ("+1 555 555 0100", nil, .invalidNumber), ("+15555550100", nil, .invalidNumber),
            ("+44 7700 900123", nil, .invalidNumber),
            ("+1 650 555 1234,5", nil, .hasExtension), ("+44 20 7946 0018 #123", nil, .hasExtension),
            ("650 555 1234", "XX", .unknownRegion("XX")), ("650 555 1234", "ZZ", .unknownRegion("ZZ")),
            ("650 555 1234", "001", .unknownRegion("001")), ("650 555 1234", "USA", .unknownRegion("USA")),
            ("650 555 1234", "", .unknownRegion("")), ("+1 650 555 1234", "xx", .unknownRegion("xx")),
        ]
        for (input, region, error) in cases {
            #expect(Self.outcome(input, region) == .failure(error), "\(input) in \(region ?? "no region")")
        }
    }

    @Test("what normalize returns normalizes to itself")
    func idempotent() throws {
        for input in ["+1 650-555-1234", "+44 20 7946 0018", "+39 06 1234 5678", "+800 1234 5678"] {
            let number = try PhoneNumber.normalize(input)
            #expect(try PhoneNumber.normalize(number.e164) == number)
            #expect(try PhoneNumber.normalize(number.e164, defaultRegion: "US") == number)
            #expect(Credentials.isPhoneNumber(number.e164))
            #expect(number.description == number.e164)
        }
    }

    @Test("many tasks normalizing at once all get the answers one task gets")
    func concurrent() async {
        let inputs: [(String, String?)] = [
            ("+1 650-555-1234", nil), ("(650) 555-1234", "US"), ("+44 20 7946 0018", nil), ("020 7946 0018", "GB"),
            ("+33 6 12 34 56 78", nil), ("+1 555 555 0100", nil), ("garbage", "US"), ("+800 1234 5678", nil),
        ]
        let expected = inputs.map { Self.outcome($0.0, $0.1) }
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for task in 0..<64 {
                group.addTask {
                    var mismatches = 0
                    for round in 0..<200 {
                        let index = (task + round) % inputs.count
                        if Self.outcome(inputs[index].0, inputs[index].1) != expected[index] { mismatches += 1 }
                    }
                    return mismatches
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        #expect(expected[0] == .success("+16505551234 US"))
    }
}
