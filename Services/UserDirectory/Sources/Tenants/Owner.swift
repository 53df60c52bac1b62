import TesseraShared

/// Who owns a row whose `tenant_id` is nullable (admin credentials, service accounts, console
/// sessions) or who an admin is: the project, which acts in every scope (`tenant_id` NULL), or one
/// tenant. Bound with `\(owner:)`.
public enum Owner: Sendable, Hashable {
    case project
    case tenant(Scope)

    /// The owner of a row's nullable `tenant_id`.
    init(column: String?) {
        self = column.map { .tenant(Scope(column: $0)) } ?? .project
    }

    /// The owner of what is created in `scope` (an admin credential, a service account): the project
    /// for the project's default scope.
    init(of scope: Scope) {
        self = scope.isProject ? .project : .tenant(scope)
    }

    /// `TESSERA_OWNER_TOKEN_SCOPE`'s form: `project`, or `tenants/<id>`.
    public init?(setting text: String) {
        if text == "project" {
            self = .project
        } else if text.hasPrefix("tenants/"), case let id = String(text.dropFirst("tenants/".count)), !id.isEmpty,
            !id.contains("/")
        {
            self = .tenant(Scope(wire: id))
        } else {
            return nil
        }
    }

    /// The one scope a tenant's owner is confined to; nil for the project.
    public var tenant: Scope? {
        if case .tenant(let scope) = self { return scope }
        return nil
    }

    /// The nullable `tenant_id` value.
    var column: String? { tenant?.key }

    /// The wire's `tenantId` of what it owns: absent for the project.
    var tenantID: String? { tenant?.tenantID }

    /// As `TESSERA_OWNER_TOKEN_SCOPE` spells it.
    var setting: String { tenant.map { "tenants/\($0.key)" } ?? "project" }
}
