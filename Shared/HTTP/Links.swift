import Foundation
import HTTPTypes
import Hummingbird
import Logging

extension Request {
    /// The URL the client reached, as far as the Host and `X-Forwarded-Proto` headers say: its origin
    /// is the external base URL; its `authority` (`host[:port]`, the scheme's default port dropped)
    /// is what an authorized domain must equal for links to be built on it.
    var external: WebURL? {
        guard let authority = hostAuthority, let url = WebURL.authority(ofHostHeader: authority) else { return nil }
        let https = headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
        return https ? WebURL("https://" + url.authority) : url
    }

    /// The Host as sent (HTTP/1.1 `Host`, HTTP/2 `:authority`).
    var hostAuthority: String? { head.authority ?? headers[HTTPField.Name("Host")!] }
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

    /// An authorized domain as an admin writes it (`app.example.com`, `localhost:3000`, an address),
    /// in the form `isAuthorized` compares: lower case, IDNA-encoded, the default port dropped. A
    /// scheme, path, userinfo or wildcard is refused, as is a blank.
    public static func normalizedDomain(_ raw: String) -> String? {
        let entry = raw.trimmingCharacters(in: .whitespaces)
        guard !entry.isEmpty, entry.count <= 253, let url = WebURL.authority(ofHostHeader: entry), !entry.contains("*")
        else { return nil }
        return url.authority
    }

    /// The configured action URL, else the public URL's action page. Without either, the request's
    /// own host, but only when it is exactly an authorized domain (issue #23): the Host header is the
    /// caller's to write, and a reset link pointing at the caller's server would hand it the
    /// victim's code. `lang` is the action page's language for this link (the app's `X-Firebase-Locale`).
    public func prefix(mode: String, tenant: String?, request: Request, lang: String = "en") throws -> String {
        let base: String
        if let actionURL {
            base = actionURL
        } else if let publicURL {
            base = publicURL + "/__/auth/action"
        } else {
            base = try requestBase(request) + "/__/auth/action"
        }
        var prefix = "\(base)?mode=\(mode)&apiKey=\(apiKey)&lang=\(lang)"
        if let tenant { prefix += "&tenantId=\(tenant)" }
        return prefix
    }

    /// The request's external base URL, when its `host[:port]` is exactly an authorized domain —
    /// not a subdomain of one, not one with another port — else `UNAUTHORIZED_DOMAIN`. For services
    /// started without a public URL; with one, nothing is built on the Host header.
    public func requestBase(_ request: Request) throws -> String {
        guard let external = request.external, authorizedDomains.contains(external.authority) else {
            throw FirebaseError.invalid(
                .unauthorizedDomain,
                "The request's host is not an authorized domain; set TESSERA_PUBLIC_URL or TESSERA_ACTION_URL")
        }
        return external.origin
    }

    /// A continue URL must be an absolute http(s) URL on an authorized domain (or a subdomain of
    /// one), read as a browser reads it (`WebURL`): `https://evil.example\@localhost/` is
    /// evil.example. Userinfo is refused. Returns the URL as the standard serializes it, which is
    /// what a browser will follow.
    public func checkContinueURL(_ raw: String?) throws -> String? {
        guard let raw, !raw.isEmpty else { return nil }
        guard let url = WebURL(raw) else { throw FirebaseError.invalid(.invalidContinueUri) }
        guard isAuthorized(url) else {
            throw FirebaseError.invalid(.unauthorizedDomain, "Domain not allowlisted by project")
        }
        return url.description
    }

    /// Tells the operator, at start, where links will point: without a public or action URL they
    /// are refused unless the request's host is an authorized domain.
    public func logSetting(to logger: Logger) {
        guard actionURL == nil, publicURL == nil else { return }
        logger.notice(
            "TESSERA_PUBLIC_URL is not set: mailed and admin-generated links are built on the request's host, and refused (UNAUTHORIZED_DOMAIN) unless it is exactly one of TESSERA_AUTHORIZED_DOMAINS",
            metadata: ["links.authorized_domains": .string(authorizedDomains.joined(separator: ","))])
    }

    /// A URL on an authorized domain: the domain itself (any port), or a subdomain of a domain
    /// name. An entry with a port admits that port only; addresses admit themselves only.
    func isAuthorized(_ url: WebURL) -> Bool {
        let host = url.hostString
        return authorizedDomains.contains { entry in
            if entry == url.authority || entry == host { return true }
            guard case .domain = url.host, !entry.contains(":"), WebURL("http://" + entry)?.host == .domain(entry)
            else { return false }
            return host.hasSuffix("." + entry)
        }
    }
}
