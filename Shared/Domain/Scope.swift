/// A tenancy scope: the project's default scope, or one tenant (docs/architecture.md, "Where tenancy is enforced").
///
/// A scope comes from three places only, and nothing else can make one:
/// - the wire, once, at the edge: a request's `tenantId` (absent or `""` for the default scope) is
///   `Scope(wire:)` or a DTO's decoded `Scope` member, and goes back as `tenantID`;
/// - a row the directory read (`tenant_id` decodes as a `Scope`);
/// - a tenant the directory creates (`Scope(minted:)`, its fresh id).
///
/// Every tenant-scoped statement binds one through `\(scope:)` (the directory's only way to bind
/// `tenant_id`, which a test checks), so a query cannot be given a stray string where a scope belongs.
public struct Scope: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The `tenant_id` column's value: `""` for the default scope, else the tenant's id.
    public let key: String

    /// The project's default scope.
    public static let project = Scope(column: "")

    /// The scope of a `tenant_id` column's value, as read from a row (`""`: the default scope).
    package init(column key: String) {
        self.key = key
    }

    /// A tenant the directory is creating, under the id it made for it.
    package init(minted id: String) {
        precondition(!id.isEmpty, "a minted tenant has an id")
        key = id
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

/// On the wire a scope is its `tenantId`: a string, absent (or `""`) for the default scope. The
/// container overloads below are what the synthesized `Codable` of a type with a `Scope` property
/// calls, so a DTO's `scope` is written as `tenantId` when it is a tenant and left out otherwise, and
/// read back from an absent, null or `""` member as the default scope.
extension Scope: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self.init(wire: container.decodeNil() ? nil : try container.decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(key)
    }
}

extension KeyedDecodingContainer {
    public func decode(_ type: Scope.Type, forKey key: Key) throws -> Scope {
        Scope(wire: try decodeIfPresent(String.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    public mutating func encode(_ value: Scope, forKey key: Key) throws {
        try encodeIfPresent(value.tenantID, forKey: key)
    }
}
