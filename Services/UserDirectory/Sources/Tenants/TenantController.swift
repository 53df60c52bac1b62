import Foundation
import Hummingbird
import Logging
import TesseraShared

/// The v2 admin API: tenants and the project config (docs/protocol/admin.md#admin-endpoints, #self-service-settings).
struct TenantController<Tenants: TenantStore> {
    let store: Tenants
    let projectID: String
    /// The deployment's authorized domains (`TESSERA_AUTHORIZED_DOMAINS`), for a config that sets none.
    let defaultDomains: [String]
    /// A scope's hash config: the project's in the project Config (project admins only), each
    /// tenant's own in the tenant (its admins may see it: it protects that tenant's hashes only).
    let hashConfig: @Sendable (_ scope: Scope, Logger) async throws -> ProjectConfigWire.HashConfigWire

    func addRoutes(to group: RouterGroup<AdminContext>) {
        group.post("v2/projects/{project}/tenants", use: create)
        group.get("v2/projects/{project}/tenants", use: list)
        group.get("v2/projects/{project}/tenants/{tenant}", use: get)
        group.patch("v2/projects/{project}/tenants/{tenant}", use: update)
        group.delete("v2/projects/{project}/tenants/{tenant}", use: delete)
        group.get("v2/projects/{project}/config", use: getConfig)
        group.patch("v2/projects/{project}/config", use: updateConfig)
    }

    struct TenantList: Codable, Sendable {
        var tenants: [TenantWire]
        var nextPageToken: String?
    }

    @Sendable func create(_ request: Request, context: AdminContext) async throws -> JSONResponse<TenantWire> {
        let input = try await request.decodeJSON(TenantWire.self, context: context)
        let displayName = input.displayName ?? "tenant"
        try Self.validateDisplayName(displayName)
        try MFAConfigWire.check(input.mfaConfig, field: "mfaConfig")
        try PhoneConfig.check(
            testPhoneNumbers: input.testPhoneNumbers, smsRegionConfig: input.smsRegionConfig, field: "testPhoneNumbers")
        var settings = ScopeSettings(
            scope: Scope(minted: Self.newTenantID(displayName: displayName)), displayName: displayName)
        for apply in TenantWire.fields.values { apply(&settings, input) }
        settings.displayName = displayName
        let created = try await store.create(settings, logger: context.logger)
        context.logger.info("tenant created", metadata: ["tenant.id": .string(created.scope.key)])
        return JSONResponse(try await answer(created, logger: context.logger))
    }

    @Sendable func list(_ request: Request, context: AdminContext) async throws -> JSONResponse<TenantList> {
        let requested = request.uri.queryParameters.get("pageSize", as: Int.self) ?? 0
        let pageSize = requested == 0 ? 20 : (requested < 0 ? 100_000 : min(requested, 1000))
        let rows = try await store.list(
            after: request.pageToken.map { Scope(wire: $0) }, limit: pageSize, logger: context.logger)
        // A full page always gets a token, even when nothing follows (the next page is then empty),
        // as the Firebase emulator's spec has it; a negative pageSize (all) never does.
        let full = requested >= 0 && rows.count == pageSize
        return JSONResponse(
            TenantList(
                tenants: rows.map { TenantWire($0, projectID: projectID) },
                nextPageToken: full ? rows.last?.scope.key : nil))
    }

    @Sendable func get(_ request: Request, context: AdminContext) async throws -> JSONResponse<TenantWire> {
        // The tenant's settings were read when its path was resolved.
        guard let settings = context.pathScope.settings else { throw FirebaseError.invalid(.tenantNotFound) }
        return JSONResponse(try await answer(settings, logger: context.logger))
    }

    /// One tenant as create, get and update answer it: the same resource each time, with the
    /// tenant's read-only hash config (docs/protocol/accounts.md#firebase-scrypt), so a GET equals the create's answer.
    func answer(_ settings: ScopeSettings, logger: Logger) async throws -> TenantWire {
        var tenant = TenantWire(settings, projectID: projectID)
        tenant.hashConfig = try await hashConfig(settings.scope, logger)
        return tenant
    }

    @Sendable func update(_ request: Request, context: AdminContext) async throws -> JSONResponse<TenantWire> {
        let input = try await request.decodeJSON(TenantWire.self, context: context)
        if let displayName = input.displayName { try Self.validateDisplayName(displayName) }
        try MFAConfigWire.check(input.mfaConfig, field: "mfaConfig")
        try PhoneConfig.check(
            testPhoneNumbers: input.testPhoneNumbers, smsRegionConfig: input.smsRegionConfig, field: "testPhoneNumbers")
        let paths = try Self.maskPaths(request, known: TenantWire.fields.keys)
        // The body's errors come first; a tenant that does not exist is found by the locked read.
        let scope = context.pathScope.named
        guard !scope.isProject,
            let updated = try await store.update(
                scope, logger: context.logger,
                { settings in
                    for path in paths { TenantWire.fields[path]?(&settings, input) }
                })
        else { throw FirebaseError.invalid(.tenantNotFound) }
        context.logger.info("tenant updated", metadata: ["tenant.id": .string(scope.key)])
        return JSONResponse(try await answer(updated, logger: context.logger))
    }

    @Sendable func delete(_ request: Request, context: AdminContext) async throws -> JSONResponse<EmptyObject> {
        let scope = try context.scope
        guard try await store.delete(scope, logger: context.logger) else {
            throw FirebaseError.invalid(.tenantNotFound)
        }
        context.logger.info("tenant deleted", metadata: ["tenant.id": .string(scope.key)])
        return JSONResponse(EmptyObject())
    }

    @Sendable func getConfig(_ request: Request, context: AdminContext) async throws
        -> JSONResponse<ProjectConfigWire>
    {
        let (scope, project) = try await store.projectConfig(logger: context.logger)
        return JSONResponse(
            ProjectConfigWire(
                scope: scope, project: project, projectID: projectID,
                hashConfig: try await hashConfig(.project, context.logger), defaultDomains: defaultDomains))
    }

    @Sendable func updateConfig(_ request: Request, context: AdminContext) async throws
        -> JSONResponse<ProjectConfigWire>
    {
        let input = try await request.decodeJSON(ProjectConfigWire.self, context: context)
        try MFAConfigWire.check(input.mfa, field: "mfa")
        try PhoneConfig.check(
            testPhoneNumbers: input.signIn?.phoneNumber?.testPhoneNumbers, smsRegionConfig: input.smsRegionConfig,
            field: "signIn.phoneNumber.testPhoneNumbers")
        let paths = try Self.maskPaths(request, known: ProjectConfigWire.fields.keys)
        let (scope, project) = try await store.updateProjectConfig(logger: context.logger) { scope, project in
            for path in paths { ProjectConfigWire.fields[path]?(&scope, &project, input) }
            project.authorizedDomains = try project.authorizedDomains.map(ProjectConfigWire.checkDomains)
        }
        context.logger.info("project config updated")
        return JSONResponse(
            ProjectConfigWire(
                scope: scope, project: project, projectID: projectID,
                hashConfig: try await hashConfig(.project, context.logger), defaultDomains: defaultDomains))
    }

    /// The paths to copy: those of `?updateMask=`, or every field (full replace) without a mask. A
    /// masked path the resource does not have changes nothing (docs/design-notes.md, "Tenants and settings").
    static func maskPaths(_ request: Request, known: some Collection<String>) throws -> [String] {
        guard let mask = request.uri.queryParameters.get("updateMask"), !mask.isEmpty else {
            return known.sorted()
        }
        return try UpdateMask.resolve(mask, known: known, ignoringUnknown: true)
    }

    /// 4–20 characters, a letter first, then letters, digits and hyphens (the Identity Platform rule).
    static func validateDisplayName(_ name: String) throws {
        let valid =
            (4...20).contains(name.count) && name.first?.isLetter == true
            && name.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" }
        if !valid {
            throw FirebaseError.invalid(
                .invalidArgument,
                "Display name must be 4-20 characters, start with a letter and contain only letters, digits and hyphens."
            )
        }
    }

    /// `<display-name-lowercased>-<5 random characters>`, as Identity Platform names tenants.
    static func newTenantID(displayName: String) -> String {
        let slug = String(displayName.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" })
        return slug + "-" + Secrets.randomAlphanumeric(5).lowercased()
    }
}
