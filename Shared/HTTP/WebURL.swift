import Foundation

/// An http(s) URL read the way browsers read it: the WHATWG URL Standard's basic URL parser for the
/// two special schemes Tessera ever sends anyone to (issue #23). Every URL judged by its host goes
/// through here — continue URLs, the hosts links are built on, identity providers' addresses — so
/// the host that is checked is the host a browser or the HTTP client then goes to:
/// - leading and trailing C0 controls and spaces are trimmed, tabs and newlines anywhere removed;
/// - `\` is `/`, and any run of slashes after `scheme:` starts the authority (`https:\\evil.example`);
/// - the authority ends at the first `/`, `\`, `?` or `#`;
/// - userinfo (`user@host`) is refused, not parsed: nothing Tessera links to needs it;
/// - the host is percent-decoded, mapped (compatibility forms, case, ideographic full stops) and
///   IDNA-encoded (`xn--`); forbidden code points fail; a host ending in a number is an IPv4 address
///   in any of the forms browsers accept (`0x7f.1`, `2130706433`), written as dotted decimal;
/// - the scheme's default port is dropped; the path, query and fragment are percent-encoded as the
///   standard's serializer does.
/// What it does not do: dot-segment removal in the path (it never changes where a URL points), and
/// the full UTS #46 table (NFKC and lower-casing stand in for its mapping; hosts it would map
/// differently are, at worst, refused by a browser).
public struct WebURL: Sendable, Equatable, CustomStringConvertible {
    public enum Host: Sendable, Equatable {
        /// Lower-case ASCII, IDNA-encoded.
        case domain(String)
        case ipv4([UInt8])
        case ipv6([UInt8])
    }

    /// `http` or `https`.
    public let scheme: String
    public let host: Host
    /// The explicit port; nil when absent or the scheme's default.
    public let port: Int?
    /// Path (at least `/`), then `?query` and `#fragment` when present, percent-encoded.
    public let rest: String

    public init?(_ input: String) {
        var s = Array(input.unicodeScalars)
        while let first = s.first, first.value <= 0x20 { s.removeFirst() }
        while let last = s.last, last.value <= 0x20 { s.removeLast() }
        s.removeAll { $0 == "\t" || $0 == "\n" || $0 == "\r" }

        var i = 0
        guard i < s.count, s[i].isASCIILetter else { return nil }
        while i < s.count, s[i].isASCIILetter || s[i].isASCIIDigit || "+-.".unicodeScalars.contains(s[i]) { i += 1 }
        guard i < s.count, s[i] == ":" else { return nil }
        let scheme = String(String.UnicodeScalarView(s[..<i])).lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        i += 1
        while i < s.count, s[i] == "/" || s[i] == "\\" { i += 1 }

        var end = i
        while end < s.count, !"/\\?#".unicodeScalars.contains(s[end]) { end += 1 }
        let authority = Array(s[i..<end])
        guard !authority.contains("@") else { return nil }
        guard let (host, port) = Self.hostAndPort(authority, scheme: scheme) else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = port
        rest = Self.serializedRest(Array(s[end...]))
    }

    /// The host as serialized: a domain, a dotted IPv4 address, or `[IPv6]`.
    public var hostString: String {
        switch host {
        case .domain(let name): return name
        case .ipv4(let bytes): return bytes.map(String.init).joined(separator: ".")
        case .ipv6(let bytes): return "[" + Self.ipv6String(bytes) + "]"
        }
    }

    /// `host[:port]`, the port only when it is not the scheme's default.
    public var authority: String { hostString + (port.map { ":\($0)" } ?? "") }

    /// The port connected to.
    public var effectivePort: Int { port ?? (scheme == "https" ? 443 : 80) }

    /// Whether the host names this machine by itself: `localhost`, 127.0.0.0/8 or `::1`.
    public var isLoopback: Bool {
        switch host {
        case .domain(let name): return name == "localhost"
        case .ipv4(let bytes): return bytes.first == 127
        case .ipv6(let bytes): return bytes == [UInt8](repeating: 0, count: 15) + [1]
        }
    }

    /// `scheme://host[:port]`.
    public var origin: String { scheme + "://" + authority }

    /// The path (at least `/`), the query after `?` and the fragment after `#`, each as serialized.
    public var path: Substring { rest.prefix { $0 != "?" && $0 != "#" } }

    public var query: Substring? {
        let beforeFragment = rest.prefix { $0 != "#" }
        guard let mark = beforeFragment.firstIndex(of: "?") else { return nil }
        return beforeFragment[beforeFragment.index(after: mark)...]
    }

    public var fragment: Substring? {
        guard let hash = rest.firstIndex(of: "#") else { return nil }
        return rest[rest.index(after: hash)...]
    }

    /// `scheme://host[:port]/path`: the resource, without query and fragment.
    public var resource: String { origin + path }

    public var description: String { origin + rest }

    /// A `Host` header's `name[:port]` (or `[IPv6][:port]`) read as the authority of an http URL;
    /// nil when it holds anything else (userinfo, a path, a query).
    public static func authority(ofHostHeader value: String) -> WebURL? {
        guard !value.isEmpty, !value.unicodeScalars.contains(where: { "/\\?#@".unicodeScalars.contains($0) }),
            value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { return nil }
        return WebURL("http://" + value)
    }

    // MARK: - Host

    static func hostAndPort(_ authority: [Unicode.Scalar], scheme: String) -> (Host, Int?)? {
        var hostPart = authority[...]
        var portPart: ArraySlice<Unicode.Scalar>?
        var insideBrackets = false
        for (index, c) in authority.enumerated() {
            if c == "[" { insideBrackets = true }
            if c == "]" { insideBrackets = false }
            if c == ":", !insideBrackets {
                hostPart = authority[..<index]
                portPart = authority[(index + 1)...]
                break
            }
        }
        var port: Int?
        if let portPart, !portPart.isEmpty {
            guard portPart.allSatisfy(\.isASCIIDigit) else { return nil }
            let digits = String(String.UnicodeScalarView(portPart)).drop { $0 == "0" }
            guard digits.count <= 5, let value = Int(digits.isEmpty ? "0" : digits), value <= 65535 else { return nil }
            port = value == (scheme == "https" ? 443 : 80) ? nil : value
        }
        guard let host = parseHost(Array(hostPart)) else { return nil }
        return (host, port)
    }

    static func parseHost(_ input: [Unicode.Scalar]) -> Host? {
        guard !input.isEmpty else { return nil }
        if input.first == "[" {
            guard input.count > 2, input.last == "]" else { return nil }
            let inside = String(String.UnicodeScalarView(input[1..<(input.count - 1)]))
            var address = in6_addr()
            guard inside.unicodeScalars.allSatisfy({ $0.isASCIIHexDigit || $0 == ":" || $0 == "." }),
                inet_pton(AF_INET6, inside, &address) == 1
            else { return nil }
            return .ipv6(withUnsafeBytes(of: &address) { Array($0) })
        }
        guard let decoded = percentDecode(input) else { return nil }
        guard let ascii = domainToASCII(decoded) else { return nil }
        if let last = ascii.split(separator: ".", omittingEmptySubsequences: false).reversed()
            .drop(while: { $0.isEmpty }).first, endsInNumber(last)
        {
            return parseIPv4(ascii).map(Host.ipv4)
        }
        return .domain(ascii)
    }

    /// Percent-decoding to UTF-8; nil when the bytes are not UTF-8.
    static func percentDecode(_ input: [Unicode.Scalar]) -> String? {
        var bytes: [UInt8] = []
        var i = 0
        while i < input.count {
            let c = input[i]
            if c == "%", i + 2 < input.count, let high = input[i + 1].hexValue, let low = input[i + 2].hexValue {
                bytes.append(UInt8(high << 4 | low))
                i += 3
                continue
            }
            bytes.append(contentsOf: Array(String(c).utf8))
            i += 1
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Code points a domain may not hold (the standard's forbidden domain code points).
    static let forbidden: Set<Unicode.Scalar> = Set(" #%/:<>?@[\\]^|".unicodeScalars)

    /// UTS #46 ToASCII, approximated: compatibility normalization, lower case, the ideographic full
    /// stops as dots, then each label with non-ASCII letters as `xn--` Punycode.
    static func domainToASCII(_ domain: String) -> String? {
        var mapped = domain.precomposedStringWithCompatibilityMapping.lowercased()
        for stop in ["\u{3002}", "\u{FF0E}", "\u{FF61}"] { mapped = mapped.replacingOccurrences(of: stop, with: ".") }
        mapped = mapped.precomposedStringWithCanonicalMapping
        var labels: [String] = []
        for label in mapped.split(separator: ".", omittingEmptySubsequences: false) {
            let scalars = Array(label.unicodeScalars)
            for c in scalars where c.value < 0x20 || c.value == 0x7F || forbidden.contains(c) { return nil }
            if scalars.allSatisfy(\.isASCII) {
                labels.append(String(label))
            } else {
                guard
                    scalars.allSatisfy({
                        $0.isASCII || $0.properties.isAlphabetic || $0.properties.isGraphemeExtend
                            || $0.properties.numericType != nil
                    }),
                    let encoded = punycode(scalars)
                else { return nil }
                labels.append("xn--" + encoded)
            }
        }
        let result = labels.joined(separator: ".")
        return result.isEmpty || result.count > 253 ? nil : result
    }

    /// RFC 3492 Punycode of one label.
    static func punycode(_ input: [Unicode.Scalar]) -> String? {
        let base = 36, tMin = 1, tMax = 26
        func digit(_ d: Int) -> Character { Character(Unicode.Scalar(UInt8(d < 26 ? 97 + d : 22 + d))) }
        func adapt(_ delta: Int, _ points: Int, _ first: Bool) -> Int {
            var d = first ? delta / 700 : delta / 2
            d += d / points
            var k = 0
            while d > ((base - tMin) * tMax) / 2 {
                d /= base - tMin
                k += base
            }
            return k + (base - tMin + 1) * d / (d + 38)
        }
        let values = input.map { Int($0.value) }
        var output = String(String.UnicodeScalarView(input.filter(\.isASCII)))
        let basic = output.count
        var handled = basic
        if basic > 0 { output.append("-") }
        var n = 128, delta = 0, bias = 72
        while handled < values.count {
            guard let m = values.filter({ $0 >= n }).min() else { return nil }
            guard (m - n) <= (Int(Int32.max) - delta) / (handled + 1) else { return nil }
            delta += (m - n) * (handled + 1)
            n = m
            for value in values {
                if value < n { delta += 1 }
                if value == n {
                    var q = delta
                    var k = base
                    while true {
                        let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                        if q < t { break }
                        output.append(digit(t + (q - t) % (base - t)))
                        q = (q - t) / (base - t)
                        k += base
                    }
                    output.append(digit(q))
                    bias = adapt(delta, handled + 1, handled == basic)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return output
    }

    /// The standard's "ends in a number": all digits, or `0x` and hex digits.
    static func endsInNumber(_ label: Substring) -> Bool {
        if label.allSatisfy({ $0.isASCII && $0.isNumber }) { return true }
        let lower = label.lowercased()
        return lower.hasPrefix("0x") && lower.dropFirst(2).allSatisfy(\.isHexDigit)
    }

    /// The standard's IPv4 parser: one to four parts in decimal, octal (leading 0) or hex (0x), the
    /// last filling the bytes left.
    static func parseIPv4(_ text: String) -> [UInt8]? {
        var parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count > 1, parts.last?.isEmpty == true { parts.removeLast() }
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard !part.isEmpty else { return nil }
            var digits = Substring(part.lowercased())
            var radix = 10
            if digits.hasPrefix("0x") {
                radix = 16
                digits = digits.dropFirst(2)
            } else if digits.count > 1, digits.hasPrefix("0") {
                radix = 8
                digits = digits.dropFirst()
            }
            if digits.isEmpty {
                numbers.append(0)
                continue
            }
            guard digits.count <= 32, let value = UInt64(digits, radix: radix) else { return nil }
            numbers.append(value)
        }
        for number in numbers.dropLast() where number > 255 { return nil }
        guard let last = numbers.last, last < UInt64(1) << (8 * (5 - numbers.count)) else { return nil }
        var address = last
        for (index, number) in numbers.dropLast().enumerated() { address += number << (8 * (3 - index)) }
        return [
            UInt8(address >> 24 & 0xFF), UInt8(address >> 16 & 0xFF), UInt8(address >> 8 & 0xFF), UInt8(address & 0xFF),
        ]
    }

    public static func ipv6String(_ bytes: [UInt8]) -> String {
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "::" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: - Path, query, fragment

    static func serializedRest(_ input: [Unicode.Scalar]) -> String {
        var path: [Unicode.Scalar] = []
        var query: [Unicode.Scalar]?
        var fragment: [Unicode.Scalar]?
        for c in input {
            if fragment != nil {
                fragment!.append(c)
            } else if c == "#" {
                fragment = []
            } else if query != nil {
                query!.append(c)
            } else if c == "?" {
                query = []
            } else {
                path.append(c == "\\" ? "/" : c)
            }
        }
        var result = path.isEmpty ? "/" : encode(path, extra: "\"#<>?`{}^")
        if let query { result += "?" + encode(query, extra: "\"#<>'") }
        if let fragment { result += "#" + encode(fragment, extra: "\"<>`") }
        return result
    }

    /// Percent-encodes C0 controls, space, DEL, non-ASCII (as UTF-8) and `extra`.
    static func encode(_ scalars: [Unicode.Scalar], extra: String) -> String {
        let extraSet = Set(extra.unicodeScalars)
        var out = ""
        for c in scalars {
            if c.value <= 0x20 || c.value >= 0x7F || extraSet.contains(c) {
                for byte in String(c).utf8 { out += String(format: "%%%02X", byte) }
            } else {
                out.unicodeScalars.append(c)
            }
        }
        return out
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
    fileprivate var isASCIIHexDigit: Bool { hexValue != nil }
    fileprivate var hexValue: Int? {
        switch self {
        case "0"..."9": return Int(value) - 48
        case "a"..."f": return Int(value) - 87
        case "A"..."F": return Int(value) - 55
        default: return nil
        }
    }
}
