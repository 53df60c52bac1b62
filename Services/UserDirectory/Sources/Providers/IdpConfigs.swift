import Crypto
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import TesseraShared

/// One identity provider's configuration in one scope (docs/protocol/federated.md#federated-providers,
/// docs/protocol/admin.md#admin-endpoints).
struct IdpConfig: Sendable, Equatable {
    var providerId: String
    var enabled = false
    var clientId = ""
    var clientSecret: String?
    /// `oidc.*` only.
    var issuer: String?
    var displayName: String?
    var responseIdToken = true
    var responseCode = false
    /// Domains whose addresses this OIDC provider verifies
    /// (docs/protocol/accounts.md#verified-email-and-automatic-linking per-tenant additions); `*` = all.
    var trustedEmailDomains: [String] = []
    /// apple.com only: what its code flow's client secret is signed with.
    var appleTeamId: String?
    var appleKeyId: String?
    var applePrivateKey: String?

    var appleCodeFlow: AppleCodeFlow? {
        guard let appleTeamId, let appleKeyId, let applePrivateKey else { return nil }
        return AppleCodeFlow(teamId: appleTeamId, keyId: appleKeyId, privateKey: applePrivateKey)
    }
}

extension FirebaseError {
    static let configurationNotFound = FirebaseError(
        status: .notFound, message: "CONFIGURATION_NOT_FOUND", grpcStatus: "NOT_FOUND", reason: "notFound")
    static let configurationExists = FirebaseError(
        status: .conflict, message: "CONFIGURATION_EXISTS", grpcStatus: "ALREADY_EXISTS", reason: "conflict")
}

/// Provider configurations in PostgreSQL; every statement filters by scope.
struct IdpConfigStore: Sendable {
    let client: Database

    static let columns = """
        provider_id, enabled, client_id, client_secret, issuer, display_name, response_id_token, response_code,
        trusted_email_domains, apple_team_id, apple_key_id, apple_private_key
        """
    typealias Row = (String, Bool, String, String?, String?, String?, Bool, Bool, [String], String?, String?, String?)

    static func config(_ r: Row) -> IdpConfig {
        let (
            providerId, enabled, clientId, clientSecret, issuer, displayName, responseIdToken, responseCode,
            trustedEmailDomains, appleTeamId, appleKeyId, applePrivateKey
        ) = r
        return IdpConfig(
            providerId: providerId, enabled: enabled, clientId: clientId, clientSecret: clientSecret, issuer: issuer,
            displayName: displayName, responseIdToken: responseIdToken, responseCode: responseCode,
            trustedEmailDomains: trustedEmailDomains, appleTeamId: appleTeamId, appleKeyId: appleKeyId,
            applePrivateKey: applePrivateKey)
    }

    static func get(_ connection: PostgresConnection, scope: Scope, providerId: String, logger: Logger) async throws
        -> IdpConfig?
    {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: columns) FROM idp_configs WHERE tenant_id = \(scope: scope) AND provider_id = \(providerId)
            """, logger: logger)
        for try await row in rows.decode(Row.self) { return config(row) }
        return nil
    }

    func get(scope: Scope, providerId: String, logger: Logger) async throws -> IdpConfig? {
        try await client.withConnection { try await Self.get($0, scope: scope, providerId: providerId, logger: logger) }
    }

    /// The scope's OIDC (`oidc = true`) or built-in providers, by id, after `after`.
    func list(scope: Scope, oidc: Bool, after: String?, limit: Int, logger: Logger) async throws -> [IdpConfig] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.columns) FROM idp_configs
            WHERE tenant_id = \(scope: scope) AND (provider_id LIKE 'oidc.%') = \(oidc) AND provider_id > \(after ?? "")
            ORDER BY provider_id LIMIT \(limit)
            """, logger: logger)
        var result: [IdpConfig] = []
        for try await row in rows.decode(Row.self) { result.append(Self.config(row)) }
        return result
    }

    func create(scope: Scope, _ c: IdpConfig, logger: Logger) async throws {
        do {
            try await client.query(
                """
                INSERT INTO idp_configs (tenant_id, provider_id, enabled, client_id, client_secret, issuer, display_name,
                    response_id_token, response_code, trusted_email_domains, apple_team_id, apple_key_id,
                    apple_private_key)
                VALUES (\(scope: scope), \(c.providerId), \(c.enabled), \(c.clientId), \(c.clientSecret), \(c.issuer),
                    \(c.displayName), \(c.responseIdToken), \(c.responseCode), \(c.trustedEmailDomains),
                    \(c.appleTeamId), \(c.appleKeyId), \(c.applePrivateKey))
                """, logger: logger)
        } catch let error as PSQLError where error.has(.uniqueViolation) {
            throw FirebaseError.configurationExists
        }
    }

    /// Reads the row under a lock, applies `change`, validates and writes it back; nil if absent.
    func update(
        scope: Scope, providerId: String, logger: Logger, _ change: @Sendable (inout IdpConfig) throws -> Void
    ) async throws -> IdpConfig? {
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM idp_configs
                WHERE tenant_id = \(scope: scope) AND provider_id = \(providerId) FOR UPDATE
                """, logger: logger)
            var found: IdpConfig?
            for try await row in rows.decode(Row.self) { found = Self.config(row) }
            guard var c = found else { return nil }
            try change(&c)
            try await connection.query(
                """
                UPDATE idp_configs SET enabled = \(c.enabled), client_id = \(c.clientId), client_secret = \(c.clientSecret),
                    issuer = \(c.issuer), display_name = \(c.displayName), response_id_token = \(c.responseIdToken),
                    response_code = \(c.responseCode), trusted_email_domains = \(c.trustedEmailDomains),
                    apple_team_id = \(c.appleTeamId), apple_key_id = \(c.appleKeyId),
                    apple_private_key = \(c.applePrivateKey), updated_at = now()
                WHERE tenant_id = \(scope: scope) AND provider_id = \(providerId)
                """, logger: logger)
            return c
        }
    }

    func delete(scope: Scope, providerId: String, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            DELETE FROM idp_configs WHERE tenant_id = \(scope: scope) AND provider_id = \(providerId) RETURNING provider_id
            """, logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
    }
}

/// The updatable paths of a built-in (`false`) and an OIDC (`true`) provider configuration.
let idpMaskPaths: [Bool: [String]] = [
    false: [
        "enabled", "clientId", "clientSecret", "appleSignInConfig.codeFlowConfig.teamId",
        "appleSignInConfig.codeFlowConfig.keyId", "appleSignInConfig.codeFlowConfig.privateKey",
    ],
    true: [
        "enabled", "clientId", "clientSecret", "issuer", "displayName", "responseType.idToken", "responseType.code",
        "trustedEmailDomains",
    ],
]

/// `…/defaultSupportedIdpConfigs`, `…/oauthIdpConfigs` and `/v2/defaultSupportedIdps`
/// (docs/protocol/admin.md#admin-endpoints shapes, docs/protocol/admin.md#self-service-settings: per tenant
/// over HTTP). The Firebase Admin SDKs' provider-config calls use these paths.
struct IdpConfigController {
    let store: IdpConfigStore
    let projectID: String

    func addRoutes(to group: RouterGroup<AdminContext>) {
        group.get("v2/defaultSupportedIdps", use: supportedIdps)
        for scope in ["v2/projects/{project}", "v2/projects/{project}/tenants/{tenant}"] {
            for collection in ["defaultSupportedIdpConfigs", "oauthIdpConfigs"] {
                let oidc = collection == "oauthIdpConfigs"
                group.post("\(scope)/\(collection)") { try await create($0, $1, oidc: oidc) }
                group.get("\(scope)/\(collection)") { try await list($0, $1, oidc: oidc) }
                group.get("\(scope)/\(collection)/{idp}") { try await get($0, $1, oidc: oidc) }
                group.patch("\(scope)/\(collection)/{idp}") { try await update($0, $1, oidc: oidc) }
                group.delete("\(scope)/\(collection)/{idp}") { try await delete($0, $1, oidc: oidc) }
            }
            // SAML providers are out of scope for now (docs/protocol/README.md#the-surface): their configs
            // answer 501, not 404.
            let saml: @Sendable (Request, AdminContext) async throws -> Response = { _, _ in
                throw FirebaseError.notImplemented("SAML identity providers")
            }
            group.post("\(scope)/inboundSamlConfigs", use: saml)
            group.get("\(scope)/inboundSamlConfigs", use: saml)
            group.get("\(scope)/inboundSamlConfigs/{idp}", use: saml)
            group.patch("\(scope)/inboundSamlConfigs/{idp}", use: saml)
            group.delete("\(scope)/inboundSamlConfigs/{idp}", use: saml)
        }
    }

    struct ResponseType: Codable, Sendable {
        var idToken: Bool?
        var code: Bool?
    }

    /// Identity Platform's `appleSignInConfig` (apple.com only): the code flow's key.
    struct AppleSignInConfig: Codable, Sendable {
        struct CodeFlowConfig: Codable, Sendable {
            var teamId: String?
            var keyId: String?
            var privateKey: String?
        }

        var codeFlowConfig: CodeFlowConfig?
    }

    /// Request and response body of both collections; built-in configs use the first four fields.
    struct ConfigWire: Codable, Sendable {
        var name: String?
        var enabled: Bool?
        var clientId: String?
        var clientSecret: String?
        var issuer: String?
        var displayName: String?
        var responseType: ResponseType?
        /// Tessera's addition (docs/protocol/accounts.md#verified-email-and-automatic-linking): domains whose
        /// addresses this OIDC provider verifies.
        var trustedEmailDomains: [String]?
        var appleSignInConfig: AppleSignInConfig?
    }

    static var maskPaths: [Bool: [String]] {
        idpMaskPaths
    }

    func wire(_ c: IdpConfig, scope: Scope, oidc: Bool) -> ConfigWire {
        let prefix = scope.tenantID.map { "projects/\(projectID)/tenants/\($0)" } ?? "projects/\(projectID)"
        let collection = oidc ? "oauthIdpConfigs" : "defaultSupportedIdpConfigs"
        var wire = ConfigWire(
            name: "\(prefix)/\(collection)/\(c.providerId)", enabled: c.enabled, clientId: c.clientId,
            clientSecret: c.clientSecret)
        if oidc {
            wire.issuer = c.issuer
            wire.displayName = c.displayName
            wire.responseType = ResponseType(idToken: c.responseIdToken, code: c.responseCode)
            wire.trustedEmailDomains = c.trustedEmailDomains.isEmpty ? nil : c.trustedEmailDomains
        }
        if c.appleTeamId != nil || c.appleKeyId != nil || c.applePrivateKey != nil {
            wire.appleSignInConfig = AppleSignInConfig(
                codeFlowConfig: .init(teamId: c.appleTeamId, keyId: c.appleKeyId, privateKey: c.applePrivateKey))
        }
        return wire
    }

    /// Copies the listed paths of `input` into `config`.
    static func apply(_ input: ConfigWire, paths: [String], to config: inout IdpConfig) {
        for path in paths {
            switch path {
            case "enabled": config.enabled = input.enabled ?? false
            case "clientId": config.clientId = input.clientId ?? ""
            case "clientSecret": config.clientSecret = input.clientSecret.flatMap { $0.isEmpty ? nil : $0 }
            case "issuer": config.issuer = input.issuer
            case "displayName": config.displayName = input.displayName
            case "responseType.idToken": config.responseIdToken = input.responseType?.idToken ?? false
            case "responseType.code": config.responseCode = input.responseType?.code ?? false
            case "trustedEmailDomains": config.trustedEmailDomains = input.trustedEmailDomains ?? []
            case "appleSignInConfig.codeFlowConfig.teamId":
                config.appleTeamId = input.appleSignInConfig?.codeFlowConfig?.teamId?.nilIfBlank
            case "appleSignInConfig.codeFlowConfig.keyId":
                config.appleKeyId = input.appleSignInConfig?.codeFlowConfig?.keyId?.nilIfBlank
            case "appleSignInConfig.codeFlowConfig.privateKey":
                config.applePrivateKey = input.appleSignInConfig?.codeFlowConfig?.privateKey?.nilIfBlank
            default: break
            }
        }
    }

    /// The paths present in a body, for a PATCH without `updateMask`.
    static func presentPaths(_ input: ConfigWire, oidc: Bool) -> [String] {
        var paths: [String] = []
        if input.enabled != nil { paths.append("enabled") }
        if input.clientId != nil { paths.append("clientId") }
        if input.clientSecret != nil { paths.append("clientSecret") }
        if let code = input.appleSignInConfig?.codeFlowConfig, !oidc {
            if code.teamId != nil { paths.append("appleSignInConfig.codeFlowConfig.teamId") }
            if code.keyId != nil { paths.append("appleSignInConfig.codeFlowConfig.keyId") }
            if code.privateKey != nil { paths.append("appleSignInConfig.codeFlowConfig.privateKey") }
        }
        if oidc {
            if input.issuer != nil { paths.append("issuer") }
            if input.displayName != nil { paths.append("displayName") }
            if input.responseType?.idToken != nil { paths.append("responseType.idToken") }
            if input.responseType?.code != nil { paths.append("responseType.code") }
            if input.trustedEmailDomains != nil { paths.append("trustedEmailDomains") }
        }
        return paths
    }

    static func validate(_ c: inout IdpConfig, oidc: Bool) throws {
        c.clientId = c.clientId.trimmingCharacters(in: .whitespaces)
        guard !c.clientId.isEmpty, c.clientId.count <= 1024 else {
            throw FirebaseError.invalid(.invalidConfig, "clientId is required.")
        }
        try validateAppleCodeFlow(&c)
        guard oidc else { return }
        // Read as the token service will fetch it (WebURL); where it may connect is decided there, after DNS.
        guard let issuer = c.issuer, let url = WebURL(issuer), url.scheme == "https" || url.isLoopback else {
            throw FirebaseError.invalid(
                .invalidConfig, "issuer must be an https URL (http only on a loopback host).")
        }
        guard c.responseIdToken || c.responseCode else {
            throw FirebaseError.invalid(.invalidConfig, "responseType needs idToken or code.")
        }
        if c.responseCode, c.clientSecret == nil {
            throw FirebaseError.invalid(.invalidConfig, "the code flow needs a clientSecret.")
        }
        c.trustedEmailDomains = try c.trustedEmailDomains.map { raw in
            let domain = raw.trimmingCharacters(in: .whitespaces).lowercased()
            guard !domain.isEmpty, !domain.contains("@"), domain.count <= 253 else {
                throw FirebaseError.invalid(.invalidConfig, "trustedEmailDomains holds an invalid domain: \(raw)")
            }
            return domain
        }
    }

    /// Apple's code-flow key: all three parts or none, only for apple.com, and a P-256 key (the
    /// kind Sign in with Apple issues) in PEM.
    static func validateAppleCodeFlow(_ c: inout IdpConfig) throws {
        // A key pasted into a form comes with CRLF line breaks (HTML forms send them so).
        c.applePrivateKey = c.applePrivateKey.map {
            $0.replacingOccurrences(of: "\r\n", with: "\n").trimmingCharacters(in: .whitespacesAndNewlines) + "\n"
        }
        let parts = [c.appleTeamId, c.appleKeyId, c.applePrivateKey]
        if parts.allSatisfy({ $0 == nil }) { return }
        guard c.providerId == "apple.com" else {
            throw FirebaseError.invalid(.invalidConfig, "appleSignInConfig is for apple.com only.")
        }
        guard parts.allSatisfy({ $0 != nil }), let teamId = c.appleTeamId, let keyId = c.appleKeyId,
            let key = c.applePrivateKey
        else {
            throw FirebaseError.invalid(
                .invalidConfig, "appleSignInConfig.codeFlowConfig needs teamId, keyId and privateKey together.")
        }
        guard teamId.count <= 64, keyId.count <= 64, (try? P256.Signing.PrivateKey(pemRepresentation: key)) != nil
        else {
            throw FirebaseError.invalid(
                .invalidConfig,
                "appleSignInConfig.codeFlowConfig.privateKey must be the P-256 key of Apple's .p8 file (PEM).")
        }
    }

    /// The provider id of a path or query, checked against the collection.
    static func checkProviderID(_ id: String?, oidc: Bool) throws -> String {
        guard let id, !id.isEmpty else { throw FirebaseError.invalid(.invalidProviderId) }
        if oidc ? !FederatedProviders.isOIDCProviderID(id) : !FederatedProviders.isBuiltIn(id) {
            throw FirebaseError.invalid(.invalidProviderId)
        }
        return id
    }

    @Sendable func create(_ request: Request, _ context: AdminContext, oidc: Bool) async throws
        -> JSONResponse<ConfigWire>
    {
        let scope = try context.scope
        let id = try Self.checkProviderID(
            request.uri.queryParameters.get(oidc ? "oauthIdpConfigId" : "idpId").map { String($0) }, oidc: oidc)
        let input = try await request.decodeJSON(ConfigWire.self, context: context)
        var config = IdpConfig(providerId: id)
        Self.apply(input, paths: Self.maskPaths[oidc]!, to: &config)
        if input.responseType?.idToken == nil, input.responseType?.code != true { config.responseIdToken = true }
        try Self.validate(&config, oidc: oidc)
        try await store.create(scope: scope, config, logger: context.logger)
        context.logger.info(
            "identity provider configured", metadata: ["tenant.id": .string(scope.key), "provider.id": .string(id)])
        return JSONResponse(wire(config, scope: scope, oidc: oidc))
    }

    struct ListResponse: Encodable, Sendable {
        var defaultSupportedIdpConfigs: [ConfigWire]?
        var oauthIdpConfigs: [ConfigWire]?
        var nextPageToken: String?
    }

    @Sendable func list(_ request: Request, _ context: AdminContext, oidc: Bool) async throws
        -> JSONResponse<ListResponse>
    {
        let scope = try context.scope
        let requested = request.uri.queryParameters.get("pageSize", as: Int.self) ?? 0
        let pageSize = requested <= 0 ? 100 : min(requested, 100)
        let page = Page(
            fetched: try await store.list(
                scope: scope, oidc: oidc, after: request.pageToken, limit: pageSize + 1, logger: context.logger),
            size: pageSize)
        let configs = page.rows.map { wire($0, scope: scope, oidc: oidc) }
        var answer = ListResponse()
        if oidc { answer.oauthIdpConfigs = configs } else { answer.defaultSupportedIdpConfigs = configs }
        answer.nextPageToken = page.nextToken(\.providerId)
        return JSONResponse(answer)
    }

    @Sendable func get(_ request: Request, _ context: AdminContext, oidc: Bool) async throws
        -> JSONResponse<ConfigWire>
    {
        let scope = try context.scope
        let id = try Self.checkProviderID(context.parameters.get("idp"), oidc: oidc)
        guard let config = try await store.get(scope: scope, providerId: id, logger: context.logger) else {
            throw FirebaseError.configurationNotFound
        }
        return JSONResponse(wire(config, scope: scope, oidc: oidc))
    }

    @Sendable func update(_ request: Request, _ context: AdminContext, oidc: Bool) async throws
        -> JSONResponse<ConfigWire>
    {
        let scope = try context.scope
        let id = try Self.checkProviderID(context.parameters.get("idp"), oidc: oidc)
        let input = try await request.decodeJSON(ConfigWire.self, context: context)
        let paths: [String]
        if let mask = request.uri.queryParameters.get("updateMask"), !mask.isEmpty {
            paths = try UpdateMask.resolve(String(mask), known: Self.maskPaths[oidc]!)
        } else {
            paths = Self.presentPaths(input, oidc: oidc)
        }
        guard
            let updated = try await store.update(
                scope: scope, providerId: id, logger: context.logger,
                { config in
                    Self.apply(input, paths: paths, to: &config)
                    try Self.validate(&config, oidc: oidc)
                })
        else { throw FirebaseError.configurationNotFound }
        context.logger.info(
            "identity provider updated", metadata: ["tenant.id": .string(scope.key), "provider.id": .string(id)])
        return JSONResponse(wire(updated, scope: scope, oidc: oidc))
    }

    @Sendable func delete(_ request: Request, _ context: AdminContext, oidc: Bool) async throws
        -> JSONResponse<EmptyObject>
    {
        let scope = try context.scope
        let id = try Self.checkProviderID(context.parameters.get("idp"), oidc: oidc)
        guard try await store.delete(scope: scope, providerId: id, logger: context.logger) else {
            throw FirebaseError.configurationNotFound
        }
        context.logger.info(
            "identity provider removed", metadata: ["tenant.id": .string(scope.key), "provider.id": .string(id)])
        return JSONResponse(EmptyObject())
    }

    struct SupportedIdp: Encodable, Sendable {
        var name: String
        var idpId: String
        var description: String
    }

    struct SupportedIdps: Encodable, Sendable {
        var defaultSupportedIdps: [SupportedIdp]
    }

    @Sendable func supportedIdps(_ request: Request, _ context: AdminContext) async throws
        -> JSONResponse<SupportedIdps>
    {
        JSONResponse(
            SupportedIdps(
                defaultSupportedIdps: FederatedProviders.builtIn.map {
                    SupportedIdp(name: "defaultSupportedIdps/\($0.id)", idpId: $0.id, description: $0.description)
                }))
    }
}

extension String {
    /// nil for an empty or all-blank string.
    var nilIfBlank: String? { trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : self }
}
