/// A tenancy scope (issue #24): the project's default scope, or one tenant. Every tenant-scoped
/// statement of the directory binds a `Scope` (its `tenant_id` value), so a query cannot be given a
/// stray string where a scope belongs. The wire's `tenantId` — absent or `""` for the default scope —
/// becomes a `Scope` once, at the edge (`Scope(wire:)`), and goes back as `tenantID`.
public struct Scope: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The `tenant_id` column's value: `""` for the default scope, else the tenant's id.
    public let key: String

    /// The project's default scope.
    public static let project = Scope(key: "")

    /// The scope whose `tenant_id` column value is `key` (`""`: the default scope).
    public init(key: String) {
        self.key = key
    }

    /// The scope a request's `tenantId` names: absent or `""` is the default scope.
    public init(wire tenantId: String?) {
        key = tenantId ?? ""
    }

    /// The wire's `tenantId`: nil for the default scope.
    public var tenantID: String? { key.isEmpty ? nil : key }

    public var isProject: Bool { key.isEmpty }

    /// The scope in logs (`tenant.id`): `""` for the default scope, as before.
    public var description: String { key }

    public static func < (lhs: Scope, rhs: Scope) -> Bool { lhs.key < rhs.key }
}
