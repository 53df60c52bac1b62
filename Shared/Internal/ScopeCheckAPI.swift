/// Whether a scope takes sign-ins of a kind (docs/design-notes.md, "Order of checks"): asked by the
/// token service before it answers a request's input errors, which come after the scope's switches
/// (`InternalEndpoints.checkScope`).
public struct CheckScopeRequest: Codable, Sendable {
    /// The sign-in method the endpoint serves, whose switch is checked after `disableAuth`.
    public enum Method: String, Codable, Sendable {
        case any, password, emailLink
    }

    public var scope: Scope
    public var method: Method

    public init(scope: Scope, method: Method) {
        self.scope = scope
        self.method = method
    }

    enum CodingKeys: String, CodingKey {
        case scope = "tenantId", method
    }
}
