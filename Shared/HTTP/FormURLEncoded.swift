import Foundation

/// `application/x-www-form-urlencoded` text: the `/v1/token` body and `signInWithIdp`'s `postBody`.
/// `name=value` pairs joined by `&`, `+` for a space, `%XX` escapes of UTF-8 bytes; the first
/// occurrence of a name wins, a pair without `=` has the empty value. Parsed by hand: Foundation's
/// `URLComponents.percentEncodedQuery` setter stops the process (`fatalError`) on a stray `%` or a
/// character outside the query set, which a client controls.
public enum FormURLEncoded {
    /// The fields, or nil when a name or value is not valid percent-encoded UTF-8.
    public static func parse(_ text: String) -> [String: String]? {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { return nil }
            var value = ""
            if parts.count == 2 {
                guard let decoded = decode(parts[1]) else { return nil }
                value = decoded
            }
            if !name.isEmpty, fields[name] == nil { fields[name] = value }
        }
        return fields
    }

    /// `name=value` pairs joined by `&`, everything but RFC 3986's unreserved characters
    /// percent-encoded (so a space is `%20`, which every reader of either form accepts).
    public static func encode(_ fields: [(String, String)]) -> String {
        fields.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&")
    }

    static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// RFC 3986 percent-encoding of everything outside the unreserved set (OAuth's rule too).
    public static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    static func decode(_ part: Substring) -> String? {
        part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
