import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// Tenants, the default scope's settings and the project config.
public protocol TenantStore: Sendable {
    func create(_ settings: ScopeSettings, logger: Logger) async throws -> ScopeSettings
    func get(_ scope: Scope, logger: Logger) async throws -> ScopeSettings?
    /// Tenants ordered by id, after `after`, at most `limit` (the default scope is never listed).
    func list(after: Scope?, limit: Int, logger: Logger) async throws -> [ScopeSettings]
    /// Reads the scope under a row lock, applies `change`, writes it back; nil if it does not exist.
    func update(
        _ scope: Scope, logger: Logger, _ change: @Sendable (inout ScopeSettings) throws -> Void
    ) async throws -> ScopeSettings?
    /// Deletes a tenant and everything it owns; false if it did not exist (or is the default scope).
    func delete(_ scope: Scope, logger: Logger) async throws -> Bool
    func projectConfig(logger: Logger) async throws -> (ScopeSettings, ProjectSettings)
    func updateProjectConfig(
        logger: Logger, _ change: @Sendable (inout ScopeSettings, inout ProjectSettings) throws -> Void
    ) async throws -> (ScopeSettings, ProjectSettings)
}

public struct PostgresTenantStore: TenantStore {
    let client: Database
    /// Retention of anonymous accounts, needed when turning auto-cleanup on schedules existing ones.
    let anonymousRetention: Duration

    public init(client: Database, anonymousRetention: Duration) {
        self.client = client
        self.anonymousRetention = anonymousRetention
    }

    typealias Row = (Scope, String, Bool, Bool, Bool, Bool, Bool, Bool, Bool, String?, String?, String?)
    static let columns = """
        tenant_id, display_name, allow_password_signup, enable_email_link_signin, enable_anonymous_user,
        disable_auth, disabled_user_signup, disabled_user_deletion, autodelete_anonymous_users, rate_limits,
        mfa_config, phone_config
        """

    static func settings(_ row: Row) -> ScopeSettings {
        var settings = ScopeSettings(
            scope: row.0, displayName: row.1, allowPasswordSignup: row.2, enableEmailLinkSignin: row.3,
            enableAnonymousUser: row.4, disableAuth: row.5, disabledUserSignup: row.6, disabledUserDeletion: row.7,
            autodeleteAnonymousUsers: row.8)
        settings.rateLimits = RateLimitSettings.decode(row.9)
        settings.mfaConfig = MFAConfig.decode(row.10)
        settings.phoneConfig = PhoneConfig.decode(row.11)
        return settings
    }

    public func create(_ settings: ScopeSettings, logger: Logger) async throws -> ScopeSettings {
        let s = settings
        try await client.query(
            """
            INSERT INTO tenants (tenant_id, display_name, allow_password_signup, enable_email_link_signin,
                enable_anonymous_user, disable_auth, disabled_user_signup, disabled_user_deletion,
                autodelete_anonymous_users, autodelete_enabled_at, rate_limits, mfa_config, phone_config)
            VALUES (\(scope: s.scope), \(s.displayName), \(s.allowPasswordSignup), \(s.enableEmailLinkSignin),
                \(s.enableAnonymousUser), \(s.disableAuth), \(s.disabledUserSignup), \(s.disabledUserDeletion),
                \(s.autodeleteAnonymousUsers), CASE WHEN \(s.autodeleteAnonymousUsers) THEN now() END,
                \(s.rateLimits.encoded), \(s.mfaConfig.encoded), \(s.phoneConfig.encoded))
            """, logger: logger)
        return settings
    }

    public func get(_ scope: Scope, logger: Logger) async throws -> ScopeSettings? {
        let rows = try await client.query(
            "SELECT \(unescaped: Self.columns) FROM tenants WHERE tenant_id = \(scope: scope)", logger: logger)
        for try await row in rows.decode(Row.self) { return Self.settings(row) }
        return nil
    }

    public func list(after: Scope?, limit: Int, logger: Logger) async throws -> [ScopeSettings] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.columns) FROM tenants
            WHERE tenant_id <> \(scope: .project) AND tenant_id > \(scope: after ?? .project)
            ORDER BY tenant_id LIMIT \(limit)
            """, logger: logger)
        var result: [ScopeSettings] = []
        for try await row in rows.decode(Row.self) { result.append(Self.settings(row)) }
        return result
    }

    public func update(
        _ scope: Scope, logger: Logger, _ change: @Sendable (inout ScopeSettings) throws -> Void
    ) async throws -> ScopeSettings? {
        let retentionSeconds = anonymousRetention.timeInterval
        return try await client.transaction(logger: logger) { connection in
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.columns) FROM tenants WHERE tenant_id = \(scope: scope) FOR UPDATE",
                logger: logger)
            var current: ScopeSettings?
            for try await row in rows.decode(Row.self) { current = Self.settings(row) }
            guard let before = current else { return nil }
            var after = before
            try change(&after)
            after.scope = before.scope
            try await Self.write(after, before: before, retentionSeconds: retentionSeconds, connection, logger)
            return after
        }
    }

    /// Writes a scope's settings. Turning auto-cleanup on records the moment and schedules the anonymous
    /// accounts that exist now at that moment + retention (docs/protocol/admin.md#anonymous-cleanup); turning
    /// it off keeps what is already scheduled.
    static func write(
        _ s: ScopeSettings, before: ScopeSettings, retentionSeconds: Double, _ connection: PostgresConnection,
        _ logger: Logger
    ) async throws {
        let enabling = s.autodeleteAnonymousUsers && !before.autodeleteAnonymousUsers
        try await connection.query(
            """
            UPDATE tenants SET display_name = \(s.displayName), allow_password_signup = \(s.allowPasswordSignup),
                enable_email_link_signin = \(s.enableEmailLinkSignin), enable_anonymous_user = \(s.enableAnonymousUser),
                disable_auth = \(s.disableAuth), disabled_user_signup = \(s.disabledUserSignup),
                disabled_user_deletion = \(s.disabledUserDeletion),
                autodelete_anonymous_users = \(s.autodeleteAnonymousUsers),
                autodelete_enabled_at = CASE WHEN \(enabling) THEN now() ELSE autodelete_enabled_at END,
                rate_limits = \(s.rateLimits.encoded), mfa_config = \(s.mfaConfig.encoded),
                phone_config = \(s.phoneConfig.encoded), updated_at = now()
            WHERE tenant_id = \(scope: s.scope)
            """, logger: logger)
        if enabling {
            try await connection.query(
                """
                UPDATE users SET anonymous_due_at = now() + make_interval(secs => \(retentionSeconds))
                WHERE tenant_id = \(scope: s.scope) AND is_anonymous AND anonymous_due_at IS NULL
                """, logger: logger)
        }
    }

    public func delete(_ scope: Scope, logger: Logger) async throws -> Bool {
        guard !scope.isProject else { return false }
        let rows = try await client.query(
            "DELETE FROM tenants WHERE tenant_id = \(scope: scope) RETURNING tenant_id", logger: logger)
        for try await _ in rows.decode(Scope.self) { return true }
        return false
    }

    public func projectConfig(logger: Logger) async throws -> (ScopeSettings, ProjectSettings) {
        guard let scope = try await get(.project, logger: logger) else {
            throw FirebaseError.internal
        }
        let rows = try await client.query(
            "SELECT allow_duplicate_emails, enable_improved_email_privacy, authorized_domains FROM project_config",
            logger: logger)
        for try await (duplicates, privacy, domains) in rows.decode((Bool, Bool, [String]?).self) {
            return (
                scope,
                ProjectSettings(
                    allowDuplicateEmails: duplicates, enableImprovedEmailPrivacy: privacy, authorizedDomains: domains)
            )
        }
        throw FirebaseError.internal
    }

    public func updateProjectConfig(
        logger: Logger, _ change: @Sendable (inout ScopeSettings, inout ProjectSettings) throws -> Void
    ) async throws -> (ScopeSettings, ProjectSettings) {
        let retentionSeconds = anonymousRetention.timeInterval
        return try await client.transaction(logger: logger) { connection in
            let scopeRows = try await connection.query(
                "SELECT \(unescaped: Self.columns) FROM tenants WHERE tenant_id = \(scope: .project) FOR UPDATE",
                logger: logger)
            var scope: ScopeSettings?
            for try await row in scopeRows.decode(Row.self) { scope = Self.settings(row) }
            let projectRows = try await connection.query(
                """
                SELECT allow_duplicate_emails, enable_improved_email_privacy, authorized_domains FROM project_config
                FOR UPDATE
                """,
                logger: logger)
            var project: ProjectSettings?
            for try await (duplicates, privacy, domains) in projectRows.decode((Bool, Bool, [String]?).self) {
                project = ProjectSettings(
                    allowDuplicateEmails: duplicates, enableImprovedEmailPrivacy: privacy, authorizedDomains: domains)
            }
            guard let scopeBefore = scope, let projectBefore = project else { throw FirebaseError.internal }
            var newScope = scopeBefore
            var newProject = projectBefore
            try change(&newScope, &newProject)
            newScope.scope = .project
            try await Self.write(newScope, before: scopeBefore, retentionSeconds: retentionSeconds, connection, logger)
            try await connection.query(
                """
                UPDATE project_config SET allow_duplicate_emails = \(newProject.allowDuplicateEmails),
                    enable_improved_email_privacy = \(newProject.enableImprovedEmailPrivacy),
                    authorized_domains = \(newProject.authorizedDomains), updated_at = now()
                """, logger: logger)
            return (newScope, newProject)
        }
    }
}
