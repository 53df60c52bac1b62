import Foundation
import HTTPTypes
import Hummingbird
import Logging

extension Request {
    /// The external base URL as the client reached the service (through the ingress), or nil when
    /// the Host is not a plain `name[:port]` or `[IPv6][:port]`. The scheme is `https` when
    /// `X-Forwarded-Proto` says so, else `http`. Both headers are the client's to write: use this
    /// only where a wrong value harms nobody but the caller, or after checking the host.
    public var externalBaseURL: String? { external?.baseURL }

    /// The external base URL and the host name it is on, read once from the request's headers.
    var external: (baseURL: String, host: String)? {
        guard let authority = hostAuthority, let host = Self.hostName(ofAuthority: authority) else { return nil }
        let proto = headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https" ? "https" : "http"
        return ("\(proto)://\(authority)", host)
    }

    /// The Host as sent (HTTP/1.1 `Host`, HTTP/2 `:authority`).
    var hostAuthority: String? { head.authority ?? headers[HTTPField.Name("Host")!] }

    /// The lower-cased host name of `name[:port]` or `[IPv6][:port]`, or nil when it is anything else
    /// (userinfo, a path, a fragment, stray characters).
    static func hostName(ofAuthority authority: String) -> String? {
        var host = Substring(authority)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            guard rest.isEmpty || (rest.first == ":" && isPort(rest.dropFirst())) else { return nil }
            let inside = host[host.index(after: host.startIndex)..<close]
            guard !inside.isEmpty, inside.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            return String(host[...close]).lowercased()
        }
        if let colon = host.firstIndex(of: ":") {
            guard isPort(host[host.index(after: colon)...]) else { return nil }
            host = host[..<colon]
        }
        guard !host.isEmpty, host.count <= 253,
            host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") })
        else { return nil }
        return host.lowercased()
    }

    private static func isPort(_ text: Substring) -> Bool {
        !text.isEmpty && text.count <= 5 && text.allSatisfy { $0.isASCII && $0.isNumber }
    }
}

/// Out-of-band action links: `<action URL>?mode=<mode>&apiKey=<key>&lang=en[&tenantId=<t>]`, to which
/// the directory appends `&oobCode=<code>[&continueUrl=…]`.
public struct ActionLinks: Sendable {
    /// Explicit action URL (`TESSERA_ACTION_URL`), else `<public URL or request base>/__/auth/action`.
    public var actionURL: String?
    public var publicURL: String?
    public var apiKey: String
    /// Hosts (and their subdomains) a `continueUrl` may point to (`TESSERA_AUTHORIZED_DOMAINS`).
    public var authorizedDomains: [String]

    public init(actionURL: String?, publicURL: String?, apiKey: String, authorizedDomains: [String]) {
        self.actionURL = actionURL
        self.publicURL = publicURL
        self.apiKey = apiKey
        self.authorizedDomains = authorizedDomains
    }

    public static let defaultAuthorizedDomains = ["localhost", "127.0.0.1"]

    public static func authorizedDomains(from text: String?) -> [String] {
        guard let text else { return defaultAuthorizedDomains }
        // A blank entry would match every host ending in a dot ("evil.example."): never kept.
        return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty }
    }

    /// The configured action URL, else the public URL's action page. Without either, the request's
    /// own host, but only when it is an authorized domain: the Host header is the caller's to write,
    /// and a reset link pointing at the caller's server would hand it the victim's code.
    /// `lang` is the action page's language for this link (the app's `X-Firebase-Locale`).
    public func prefix(mode: String, tenant: String?, request: Request, lang: String = "en") throws -> String {
        let base: String
        if let actionURL {
            base = actionURL
        } else if let publicURL {
            base = publicURL + "/__/auth/action"
        } else {
            guard let external = request.external,
                isAuthorized(host: external.host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
            else {
                throw FirebaseError.invalid(
                    "UNAUTHORIZED_DOMAIN",
                    "The request's host is not an authorized domain; set TESSERA_PUBLIC_URL or TESSERA_ACTION_URL")
            }
            base = external.baseURL + "/__/auth/action"
        }
        var prefix = "\(base)?mode=\(mode)&apiKey=\(apiKey)&lang=\(lang)"
        if let tenant { prefix += "&tenantId=\(tenant)" }
        return prefix
    }

    /// A continue URL must be absolute http(s) on an authorized domain, and made only of the characters
    /// RFC 3986 allows: a browser reads some others differently from this parser (`\` is `/` to it, so
    /// `http://evil.example\@localhost/` is evil.example to a browser and localhost here), and
    /// userinfo (`user@host`) is refused outright.
    public func checkContinueURL(_ raw: String?) throws -> String? {
        guard let raw, !raw.isEmpty else { return nil }
        guard raw.unicodeScalars.allSatisfy({ Self.uriCharacters.contains($0) }),
            let url = URL(string: raw), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.user == nil, url.password == nil, let host = url.host?.lowercased()
        else { throw FirebaseError.invalid("INVALID_CONTINUE_URI") }
        guard isAuthorized(host: host) else {
            throw FirebaseError.invalid("UNAUTHORIZED_DOMAIN", "Domain not allowlisted by project")
        }
        return raw
    }

    /// Tells the operator, at start, where links will point: without a public or action URL they
    /// are refused unless the request's host is an authorized domain.
    public func logSetting(to logger: Logger) {
        guard actionURL == nil, publicURL == nil else { return }
        logger.notice(
            "TESSERA_PUBLIC_URL is not set: mailed and admin-generated links are built on the request's host, and refused (UNAUTHORIZED_DOMAIN) unless it is one of TESSERA_AUTHORIZED_DOMAINS",
            metadata: ["links.authorized_domains": .string(authorizedDomains.joined(separator: ","))])
    }

    /// RFC 3986's unreserved and reserved characters and `%` (of percent-encoding).
    static let uriCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%")

    /// An authorized domain or a subdomain of one.
    func isAuthorized(host: String) -> Bool {
        !host.isEmpty && authorizedDomains.contains(where: { !$0.isEmpty && (host == $0 || host.hasSuffix("." + $0)) })
    }
}
