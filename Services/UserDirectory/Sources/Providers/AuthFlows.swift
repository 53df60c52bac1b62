import Foundation
import Hummingbird
import Logging
import PostgresNIO
import TesseraShared

/// Authorization flows with identity providers between their start and their redemption
/// (docs/oauth-flows.md): written when a flow starts, read by the hosted handler when the provider
/// answers, deleted by the `signInWithIdp` that redeems it. Every statement filters by scope.
struct AuthFlowStore: Sendable {
    let client: Database

    /// Starting a flow is open to anyone with the (public) API key, and each one keeps a row until
    /// it is used or expires: the scope must exist and be enabled, and the client's address is
    /// counted against the scope's `idpSignInsPerIpPerHour`.
    func create(_ request: CreateAuthFlowRequest, logger: Logger) async throws {
        let scope = request.scope
        let flow = request.flow
        let client = try flow.client.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        try await self.client.transaction(logger: logger) { connection in
            let flags = try await ScopeFlags.read(connection, scope: scope, lock: false, logger: logger)
            try await RateLimiter.hit(
                connection, scope: scope, bucket: "idp_sign_in", key: request.clientIP,
                limit: flags.rateLimits.idpSignInsPerIpPerHour, logger: logger)
            try await connection.query(
                """
                INSERT INTO auth_flows (tenant_id, state_hash, provider_id, session_hashes, api_key_hash, continue_uri,
                    redirect_uri, token_url, nonce, code_verifier, request_token, request_token_secret, client,
                    expires_at)
                VALUES (\(scope: scope), \(request.stateHash), \(flow.providerId), \(flow.sessionHashes), \(flow.apiKeyHash),
                    \(flow.continueUri), \(flow.redirectUri), \(flow.tokenURL), \(flow.nonce), \(flow.codeVerifier),
                    \(flow.requestToken), \(flow.requestTokenSecret), \(client),
                    now() + make_interval(secs => \(Double(request.ttlSeconds))))
                """, logger: logger)
        }
    }

    static let columns = """
        provider_id, session_hashes, api_key_hash, continue_uri, redirect_uri, token_url, nonce, code_verifier,
        request_token, request_token_secret, client
        """

    typealias Row = (String, [String], String, String, String, String?, String?, String?, String?, String?, String?)

    /// The flow of a row of `columns`.
    static func flow(_ row: Row) -> AuthFlow {
        let (
            providerId, sessionHashes, apiKeyHash, continueUri, redirectUri, tokenURL, nonce, codeVerifier,
            requestToken, requestTokenSecret, client
        ) = row
        var flow = AuthFlow(
            providerId: providerId, sessionHashes: sessionHashes, apiKeyHash: apiKeyHash, continueUri: continueUri,
            redirectUri: redirectUri)
        flow.tokenURL = tokenURL
        flow.nonce = nonce
        flow.codeVerifier = codeVerifier
        flow.requestToken = requestToken
        flow.requestTokenSecret = requestTokenSecret
        flow.client = client.flatMap { try? JSONDecoder().decode(AuthFlowClient.self, from: Data($0.utf8)) }
        return flow
    }

    /// The unexpired flow, left in place (the hosted handler reads where to send the answer).
    func get(_ request: AuthFlowRequest, logger: Logger) async throws -> AuthFlow {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.columns) FROM auth_flows
            WHERE tenant_id = \(scope: request.scope) AND state_hash = \(request.stateHash) AND expires_at > now()
            """, logger: logger)
        for try await row in rows.decode(Row.self) { return Self.flow(row) }
        throw Self.unknownFlow
    }

    /// The unexpired flow, deleted in the same statement: of two redemptions only one gets it.
    func consume(_ request: AuthFlowRequest, logger: Logger) async throws -> AuthFlow {
        let rows = try await client.query(
            """
            DELETE FROM auth_flows
            WHERE tenant_id = \(scope: request.scope) AND state_hash = \(request.stateHash) AND expires_at > now()
            RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        for try await row in rows.decode(Row.self) { return Self.flow(row) }
        throw Self.unknownFlow
    }

    /// The same answer for a state never issued, one already used, one of another scope and one
    /// expired: none of them can be told from the others.
    static let unknownFlow = FirebaseError.invalid(
        .invalidIdpResponse, "The sign-in session is unknown, has expired or was already used; sign in again.")

    func addRoutes(to group: RouterGroup<DirectoryInternalContext>) {
        group.on(InternalEndpoints.createAuthFlow) { body, context in
            try await create(body, logger: context.logger)
            context.logger.info(
                "identity provider sign-in started",
                metadata: [
                    "tenant.id": .string(body.scope.key), "provider.id": .string(body.flow.providerId),
                    "client.platform": .string(body.flow.client?.platform.rawValue ?? "app"),
                ])
            return EmptyObject()
        }
        group.on(InternalEndpoints.getAuthFlow) { body, context in
            AuthFlowResponse(flow: try await get(body, logger: context.logger))
        }
        group.on(InternalEndpoints.consumeAuthFlow) { body, context in
            AuthFlowResponse(flow: try await consume(body, logger: context.logger))
        }
    }
}

/// The project's authorized domains (docs/oauth-flows.md §2, "No open redirect"; Firebase's `Config.authorizedDomains`): those the
/// project config lists, or the deployment's default (`TESSERA_AUTHORIZED_DOMAINS`) until an admin
/// sets them.
struct AuthorizedDomains: Sendable {
    let client: Database
    let deploymentDefault: [String]

    func current(logger: Logger) async throws -> [String] {
        let rows = try await client.query("SELECT authorized_domains FROM project_config", logger: logger)
        for try await stored in rows.decode([String]?.self) { return stored ?? deploymentDefault }
        return deploymentDefault
    }

    /// The links of `base` with the current domains, for checking a `continueUrl`.
    func links(_ base: ActionLinks, logger: Logger) async throws -> ActionLinks {
        var links = base
        links.authorizedDomains = try await current(logger: logger)
        return links
    }

    func addRoutes(to group: RouterGroup<DirectoryInternalContext>) {
        group.on(InternalEndpoints.authorizedDomains) { context in
            AuthorizedDomainsResponse(authorizedDomains: try await current(logger: context.logger))
        }
    }
}
