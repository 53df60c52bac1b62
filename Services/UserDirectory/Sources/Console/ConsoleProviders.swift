import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraConsole
import TesseraShared

/// The console's identity providers page: the built-in providers and the scope's OIDC providers with their
/// trusted email domains (docs/protocol/accounts.md#verified-email-and-automatic-linking), changed through
/// `IdpConfigStore` and checked by the admin API's own `IdpConfigController.validate`.
extension ConsoleController {
    @Sendable func providers(_ request: Request, context: AdminContext) async throws -> Response {
        try await providersPage(request: request, context: context, scope: context.scope)
    }

    func providersPage(
        request: Request, context: AdminContext, scope: Scope, error: (provider: String, message: String)? = nil
    ) async throws -> Response {
        let builtIn = try await idpConfigs.list(
            scope: scope, oidc: false, after: nil, limit: 100, logger: context.logger)
        let oidc = try await idpConfigs.list(scope: scope, oidc: true, after: nil, limit: 100, logger: context.logger)
        let builtInRows = FederatedProviders.builtIn.map { provider in
            let config = builtIn.first { $0.providerId == provider.id }
            return ProvidersPage.BuiltIn(
                id: provider.id, label: provider.description,
                field: provider.id.replacingOccurrences(of: ".", with: "-"), enabled: config?.enabled ?? false,
                clientId: config?.clientId ?? "", secretSet: config?.clientSecret != nil,
                trustedFor: FederatedProviders.trustedFor(provider.id),
                apple: provider.id == "apple.com"
                    ? ProvidersPage.Apple(
                        teamId: config?.appleTeamId ?? "", keyId: config?.appleKeyId ?? "",
                        keySet: config?.applePrivateKey != nil) : nil,
                error: error?.provider == provider.id ? error?.message : nil)
        }
        let oidcRows = oidc.map { config in
            ProvidersPage.OIDC(
                id: config.providerId, field: config.providerId.replacingOccurrences(of: ".", with: "-"),
                name: config.displayName ?? config.providerId, issuer: config.issuer ?? "", clientId: config.clientId,
                enabled: config.enabled, domains: config.trustedEmailDomains.joined(separator: ", "),
                flow: config.responseCode ? "code flow with the client secret" : "ID token (form_post)",
                error: error?.provider == config.providerId ? error?.message : nil)
        }
        let page = ProvidersPage(
            chrome: chrome(context, scope: scope, section: .providers), notice: Self.notice(request),
            redirectUri: redirectURI, publicURLUnset: links.publicURL == nil, builtIn: builtInRows, oidc: oidcRows,
            newError: error?.provider == "new" ? error?.message : nil)
        return views.render(page, status: error == nil ? .ok : .badRequest)
    }

    /// Where every provider sends its answer (the token service's `/__/auth/handler` on the public
    /// URL): the redirect URI to register with each provider.
    var redirectURI: String {
        guard let publicURL = links.publicURL else { return "https://<public URL>/__/auth/handler" }
        return (publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL) + "/__/auth/handler"
    }

    static func domains(_ text: String?) -> [String] {
        (text ?? "").split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\n" }).map(String.init)
    }

    /// A built-in provider's switch and client: created at its first save, updated after.
    @Sendable func saveBuiltIn(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        let id = try context.parameters.require("provider")
        guard FederatedProviders.isBuiltIn(id) else { throw FirebaseError.invalid(.invalidProviderId) }
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        let enabled = form["enabled"] == "on"
        let clientId = form["clientId"] ?? ""
        // An empty secret field keeps the stored secret: it is never shown again. So does an empty
        // Apple private key.
        let secret = form["clientSecret"].flatMap { $0.isEmpty ? nil : $0 }
        let apple = id == "apple.com"
        let teamId = form["appleTeamId"]?.trimmingCharacters(in: .whitespaces).nilIfBlank
        let keyId = form["appleKeyId"]?.trimmingCharacters(in: .whitespaces).nilIfBlank
        let privateKey = form["applePrivateKey"]?.nilIfBlank
        let applyApple: @Sendable (inout IdpConfig) -> Void = { config in
            guard apple else { return }
            config.appleTeamId = teamId
            config.appleKeyId = keyId
            if let privateKey { config.applePrivateKey = privateKey }
            if teamId == nil, keyId == nil { config.applePrivateKey = nil }
        }
        do {
            let updated = try await idpConfigs.update(scope: scope, providerId: id, logger: context.logger) { config in
                config.enabled = enabled
                config.clientId = clientId
                if let secret { config.clientSecret = secret }
                applyApple(&config)
                try IdpConfigController.validate(&config, oidc: false)
            }
            if updated == nil {
                var config = IdpConfig(providerId: id, enabled: enabled, clientId: clientId, clientSecret: secret)
                applyApple(&config)
                try IdpConfigController.validate(&config, oidc: false)
                try await idpConfigs.create(scope: scope, config, logger: context.logger)
            }
        } catch let error as FirebaseError where error.errorCode == .invalidConfig {
            return try await providersPage(
                request: request, context: context, scope: scope, error: (id, Self.words(error)))
        }
        return Self.redirect(Self.base(scope) + "/providers?notice=saved")
    }

    @Sendable func createOIDC(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        do {
            let id = try IdpConfigController.checkProviderID(
                form["providerId"]?.trimmingCharacters(in: .whitespaces), oidc: true)
            var config = IdpConfig(
                providerId: id, enabled: form["enabled"] == "on", clientId: form["clientId"] ?? "",
                clientSecret: form["clientSecret"].flatMap { $0.isEmpty ? nil : $0 },
                issuer: form["issuer"]?.trimmingCharacters(in: .whitespaces),
                displayName: form["displayName"].flatMap { $0.isEmpty ? nil : $0 },
                trustedEmailDomains: Self.domains(form["trustedEmailDomains"]))
            try IdpConfigController.validate(&config, oidc: true)
            try await idpConfigs.create(scope: scope, config, logger: context.logger)
        } catch let error as FirebaseError where error.errorCode != nil || error == .configurationExists {
            let message =
                error == .configurationExists ? "This scope already has a provider with this id." : Self.words(error)
            return try await providersPage(request: request, context: context, scope: scope, error: ("new", message))
        }
        return Self.redirect(Self.base(scope) + "/providers?notice=saved")
    }

    @Sendable func saveOIDC(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        let id = try context.parameters.require("provider")
        var request = request
        let form = try await ConsoleSessionMiddleware.form(&request)
        let enabled = form["enabled"] == "on"
        let domains = Self.domains(form["trustedEmailDomains"])
        do {
            guard
                try await idpConfigs.update(
                    scope: scope, providerId: id, logger: context.logger,
                    { config in
                        config.enabled = enabled
                        config.trustedEmailDomains = domains
                        try IdpConfigController.validate(&config, oidc: true)
                    }) != nil
            else { throw FirebaseError.configurationNotFound }
        } catch let error as FirebaseError where error.errorCode == .invalidConfig {
            return try await providersPage(
                request: request, context: context, scope: scope, error: (id, Self.words(error)))
        }
        return Self.redirect(Self.base(scope) + "/providers?notice=saved")
    }

    @Sendable func deleteOIDC(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try context.scope
        let id = try context.parameters.require("provider")
        guard try await idpConfigs.delete(scope: scope, providerId: id, logger: context.logger) else {
            throw FirebaseError.configurationNotFound
        }
        return Self.redirect(Self.base(scope) + "/providers?notice=saved")
    }
}
