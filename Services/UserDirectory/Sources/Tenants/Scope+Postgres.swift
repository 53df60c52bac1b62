import NIOCore
import PostgresNIO
import TesseraShared

// How a scope meets PostgreSQL (docs/architecture.md, "Where tenancy is enforced"). A `Scope` is not
// `PostgresEncodable`: the only ways to bind a `tenant_id` are the interpolations and the binding
// below, so a search for them finds every tenant filter, and `TenancyBindingTests` fails on a query
// that binds `tenant_id` any other way.

extension PostgresQuery.StringInterpolation {
    /// Binds a scope as its `tenant_id` value.
    public mutating func appendInterpolation(scope: Scope) {
        appendInterpolation(scope.key)
    }

    /// Binds a project-or-tenant owner as its nullable `tenant_id` value (NULL: the project).
    mutating func appendInterpolation(owner: Owner) {
        appendInterpolation(owner.column)
    }
}

extension PostgresBindings {
    /// A prepared statement's scope parameter (by convention `$1`).
    public mutating func append(scope: Scope) {
        append(scope.key)
    }
}

/// A `tenant_id` column read back is a scope.
extension Scope: PostgresDecodable {
    public init<JSONDecoder: PostgresJSONDecoder>(
        from byteBuffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat,
        context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        self.init(column: try String(from: &byteBuffer, type: type, format: format, context: context))
    }
}
