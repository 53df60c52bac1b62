import Logging
import PostgresNIO
import TesseraShared

/// Per-scope mail templates in PostgreSQL: a scope's own subject and body per request type, where it
/// has set one (else the built-in `MailTemplate.standard`).
struct MailTemplateStore: Sendable {
    let client: Database

    /// The scope's own template, on a connection the caller holds (the OOB transaction's).
    static func read(_ connection: PostgresConnection, scope: Scope, type: OobRequestType, logger: Logger)
        async throws -> MailTemplate?
    {
        let rows = try await connection.query(
            "SELECT subject, body FROM mail_templates WHERE tenant_id = \(scope: scope) AND request_type = \(type.rawValue)",
            logger: logger)
        for try await (subject, body) in rows.decode((String, String).self) {
            return MailTemplate(subject: subject, body: body)
        }
        return nil
    }

    /// The scope's own templates by type (types without one are absent).
    func custom(scope: Scope, logger: Logger) async throws -> [OobRequestType: MailTemplate] {
        let rows = try await client.query(
            "SELECT request_type, subject, body FROM mail_templates WHERE tenant_id = \(scope: scope)", logger: logger)
        var templates: [OobRequestType: MailTemplate] = [:]
        for try await (type, subject, body) in rows.decode((String, String, String).self) {
            if let type = OobRequestType(rawValue: type) {
                templates[type] = MailTemplate(subject: subject, body: body)
            }
        }
        return templates
    }

    func save(_ template: MailTemplate, scope: Scope, type: OobRequestType, logger: Logger) async throws {
        try await client.query(
            """
            INSERT INTO mail_templates (tenant_id, request_type, subject, body)
            VALUES (\(scope: scope), \(type.rawValue), \(template.subject), \(template.body))
            ON CONFLICT (tenant_id, request_type) DO UPDATE SET subject = EXCLUDED.subject, body = EXCLUDED.body, updated_at = now()
            """, logger: logger)
    }

    /// Returns the scope to the built-in template for `type`.
    func reset(scope: Scope, type: OobRequestType, logger: Logger) async throws {
        try await client.query(
            "DELETE FROM mail_templates WHERE tenant_id = \(scope: scope) AND request_type = \(type.rawValue)",
            logger: logger)
    }
}
