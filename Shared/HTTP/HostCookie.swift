import HTTPTypes
import Hummingbird

/// A cookie of the console or a hosted page (docs/design-notes.md, "Cookies"). Over HTTPS it is
/// named with the `__Host-` prefix, which browsers accept only with `Secure`, `Path=/` and no
/// `Domain`: a page on a sibling subdomain or on plain HTTP cannot set or overwrite it (cookie
/// tossing). Over plain HTTP (the local stack) the prefix would make browsers drop the cookie, so
/// it keeps its bare name and its narrower path there. Each request reads only the name its own
/// scheme sets.
public struct HostCookie: Sendable {
    public let name: String
    /// The path on plain HTTP; `__Host-` cookies are always `Path=/`.
    public let plainPath: String

    public init(name: String, plainPath: String) {
        self.name = name
        self.plainPath = plainPath
    }

    /// Whether the client reached Tessera over HTTPS, as the ingress says (`X-Forwarded-Proto`).
    public static func isSecure(_ request: Request) -> Bool {
        request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
    }

    public func name(for request: Request) -> String {
        Self.isSecure(request) ? "__Host-" + name : name
    }

    /// The cookie to set on the answer to `request`; `maxAge` 0 removes it.
    public func cookie(_ value: String, maxAge: Int?, for request: Request) -> Cookie {
        let secure = Self.isSecure(request)
        return Cookie(
            name: name(for: request), value: value, maxAge: maxAge, path: secure ? "/" : plainPath, secure: secure,
            httpOnly: true, sameSite: .strict)
    }

    /// The value `request` carries under the name its scheme uses.
    public func value(in request: Request) -> String? {
        request.cookies[name(for: request)]?.value
    }
}
