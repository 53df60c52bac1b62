import Foundation
import HTTPTypes
import Hummingbird

extension Request {
    /// The external base URL as the client reached the service (through the ingress).
    public var externalBaseURL: String {
        let proto = headers[HTTPField.Name("X-Forwarded-Proto")!] ?? "http"
        let host = head.authority ?? headers[HTTPField.Name("Host")!] ?? "127.0.0.1"
        return "\(proto)://\(host)"
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
        return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }

    public func prefix(mode: String, tenant: String?, request: Request) -> String {
        let base = actionURL ?? ((publicURL ?? request.externalBaseURL) + "/__/auth/action")
        var prefix = "\(base)?mode=\(mode)&apiKey=\(apiKey)&lang=en"
        if let tenant { prefix += "&tenantId=\(tenant)" }
        return prefix
    }

    /// A continue URL must be absolute http(s) on an authorized domain.
    public func checkContinueURL(_ raw: String?) throws -> String? {
        guard let raw, !raw.isEmpty else { return nil }
        guard let url = URL(string: raw), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host?.lowercased()
        else { throw FirebaseError.invalid("INVALID_CONTINUE_URI") }
        guard authorizedDomains.contains(where: { host == $0 || host.hasSuffix("." + $0) }) else {
            throw FirebaseError.invalid("UNAUTHORIZED_DOMAIN", "Domain not allowlisted by project")
        }
        return raw
    }
}
