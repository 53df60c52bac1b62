import Hummingbird
import Logging
import TesseraShared

/// `GET /v2/projects/{p}[/tenants/{t}]/mailTemplates`, and `PATCH` / `DELETE …/mailTemplates/{requestType}`
/// (Tessera's own admin resource, docs/protocol/admin.md#tesseras-own-admin-resources conventions): the
/// subject and plain-text body of the verification, password-reset, email-change, sign-in and email-recovery
/// mails, with the placeholders `%APP_NAME%`, `%LINK%`, `%EMAIL%`, `%NEW_EMAIL%`, `%DISPLAY_NAME%`. `DELETE`
/// returns a template to the built-in default.
struct MailTemplateController {
    let store: MailTemplateStore

    func addRoutes(to group: RouterGroup<AdminContext>) {
        for scope in ["v2/projects/{project}", "v2/projects/{project}/tenants/{tenant}"] {
            group.get("\(scope)/mailTemplates", use: list)
            group.patch("\(scope)/mailTemplates/{requestType}", use: update)
            group.delete("\(scope)/mailTemplates/{requestType}", use: reset)
        }
    }

    struct TemplateWire: Codable, Sendable {
        var requestType: String?
        var subject: String?
        var body: String?
        /// False when the built-in default is in force.
        var custom: Bool?
    }

    struct TemplateList: Codable, Sendable {
        var templates: [TemplateWire]
    }

    static var types: [OobRequestType] {
        [.verifyEmail, .passwordReset, .verifyAndChangeEmail, .emailSignIn, .recoverEmail]
    }

    static func type(_ context: AdminContext) throws -> OobRequestType {
        guard let type = OobRequestType(rawValue: try context.parameters.require("requestType")) else {
            throw FirebaseError.invalidArgument(
                "INVALID_ARGUMENT : requestType must be VERIFY_EMAIL, PASSWORD_RESET, VERIFY_AND_CHANGE_EMAIL, EMAIL_SIGNIN or RECOVER_EMAIL"
            )
        }
        return type
    }

    /// What a template must be, for the API and the console alike.
    static func check(subject: String, body: String) throws {
        guard !subject.isEmpty, subject.count <= 200, !subject.contains(where: \.isNewline) else {
            throw FirebaseError.invalidArgument("INVALID_ARGUMENT : subject must be one line of 1-200 characters")
        }
        guard body.contains("%LINK%"), body.count <= 20_000 else {
            throw FirebaseError.invalidArgument(
                "INVALID_ARGUMENT : body must contain %LINK% and be at most 20000 characters")
        }
    }

    @Sendable func list(_ request: Request, context: AdminContext) async throws -> JSONResponse<TemplateList> {
        let scope = try context.scope
        let custom = try await store.custom(scope: scope, logger: context.logger)
        let templates = Self.types.map { type in
            let template = custom[type] ?? MailTemplate.standard(type)
            return TemplateWire(
                requestType: type.rawValue, subject: template.subject, body: template.body, custom: custom[type] != nil)
        }
        return JSONResponse(TemplateList(templates: templates))
    }

    @Sendable func update(_ request: Request, context: AdminContext) async throws -> JSONResponse<TemplateWire> {
        let scope = try context.scope
        let type = try Self.type(context)
        let input = try await request.decodeJSON(TemplateWire.self, context: context)
        let current = try await store.custom(scope: scope, logger: context.logger)[type] ?? MailTemplate.standard(type)
        let subject = input.subject ?? current.subject
        let body = input.body ?? current.body
        try Self.check(subject: subject, body: body)
        try await store.save(
            MailTemplate(subject: subject, body: body), scope: scope, type: type, logger: context.logger)
        context.logger.info(
            "mail template updated", metadata: ["tenant.id": .string(scope.key), "oob.type": .string(type.rawValue)])
        return JSONResponse(TemplateWire(requestType: type.rawValue, subject: subject, body: body, custom: true))
    }

    @Sendable func reset(_ request: Request, context: AdminContext) async throws -> JSONResponse<TemplateWire> {
        let scope = try context.scope
        let type = try Self.type(context)
        try await store.reset(scope: scope, type: type, logger: context.logger)
        let template = MailTemplate.standard(type)
        return JSONResponse(
            TemplateWire(requestType: type.rawValue, subject: template.subject, body: template.body, custom: false))
    }
}
