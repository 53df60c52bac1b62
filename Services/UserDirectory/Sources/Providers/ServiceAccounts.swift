import Foundation
import Hummingbird
import Logging
import PostgresNIO
import TesseraShared
import _CryptoExtras

/// A service account that signs custom tokens (docs/protocol/tokens.md#token-rules,
/// docs/protocol/admin.md#tesseras-own-admin-resources): its public key only.
struct ServiceAccount: Sendable {
    var accountId: String
    /// The project (may sign for any scope) or the one tenant it signs for.
    var owner: Owner
    var displayName: String
    var clientEmail: String
    var clientId: String
    var privateKeyId: String
    var publicKeyPem: String
    var createTime: Date
}

struct ServiceAccountStore: Sendable {
    let client: Database
    let projectID: String

    static let columns =
        "account_id, tenant_id, display_name, client_email, client_id, private_key_id, public_key_pem, created_at"
    typealias Row = (String, String?, String, String, String, String, String, Date)

    static func account(_ r: Row) -> ServiceAccount {
        ServiceAccount(
            accountId: r.0, owner: Owner(column: r.1), displayName: r.2, clientEmail: r.3, clientId: r.4,
            privateKeyId: r.5,
            publicKeyPem: r.6, createTime: r.7)
    }

    /// Registers a public key under a new account; the caller keeps (or was just given) the private key.
    func create(owner: Owner, displayName: String, publicKeyPem: String, logger: Logger) async throws
        -> ServiceAccount
    {
        let accountId = "sa-" + Secrets.randomAlphanumeric(16).lowercased()
        let keyId = Secrets.randomBytes(20).map { String(format: "%02x", $0) }.joined()
        let clientId = "1" + (0..<20).map { _ in String(Int.random(in: 0...9)) }.joined()
        let email = "\(accountId)@\(projectID).iam.tessera.local"
        let rows = try await client.query(
            """
            INSERT INTO service_accounts (account_id, tenant_id, display_name, client_email, client_id, private_key_id,
                public_key_pem)
            VALUES (\(accountId), \(owner: owner), \(displayName), \(email), \(clientId), \(keyId), \(publicKeyPem))
            RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        for try await row in rows.decode(Row.self) { return Self.account(row) }
        throw FirebaseError.internal
    }

    /// A page of live accounts in id order, after `after` (the previous page's last id).
    func list(owner: Owner, after: String?, limit: Int, logger: Logger) async throws -> [ServiceAccount] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.columns) FROM service_accounts
            WHERE tenant_id IS NOT DISTINCT FROM \(owner: owner) AND revoked_at IS NULL AND account_id > \(after ?? "")
            ORDER BY account_id LIMIT \(limit)
            """, logger: logger)
        var result: [ServiceAccount] = []
        for try await row in rows.decode(Row.self) { result.append(Self.account(row)) }
        return result
    }

    func revoke(accountId: String, owner: Owner, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            UPDATE service_accounts SET revoked_at = now()
            WHERE account_id = \(accountId) AND tenant_id IS NOT DISTINCT FROM \(owner: owner) AND revoked_at IS NULL
            RETURNING account_id
            """, logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
    }

    /// The live account whose key signed a token: by `kid` (= `private_key_id`), or by `iss` (=
    /// `client_email`) for tokens signed without a key id.
    func signer(keyId: String?, issuer: String?, logger: Logger) async throws -> ServiceAccount? {
        let rows: PostgresRowSequence
        if let keyId {
            rows = try await client.query(
                """
                SELECT \(unescaped: Self.columns) FROM service_accounts
                WHERE private_key_id = \(keyId) AND revoked_at IS NULL
                """, logger: logger)
        } else if let issuer {
            rows = try await client.query(
                """
                SELECT \(unescaped: Self.columns) FROM service_accounts
                WHERE client_email = \(issuer) AND revoked_at IS NULL
                """, logger: logger)
        } else {
            return nil
        }
        for try await row in rows.decode(Row.self) { return Self.account(row) }
        return nil
    }
}

/// `…/serviceAccounts` (docs/protocol/admin.md#tesseras-own-admin-resources).
struct ServiceAccountController<Tenants: TenantStore> {
    let store: ServiceAccountStore
    let tenants: Tenants
    let projectID: String

    func addRoutes(to group: RouterGroup<AdminContext>) {
        for scope in ["v2/projects/{project}", "v2/projects/{project}/tenants/{tenant}"] {
            group.post("\(scope)/serviceAccounts", use: create)
            group.get("\(scope)/serviceAccounts", use: list)
            group.delete("\(scope)/serviceAccounts/{account}", use: revoke)
        }
    }

    /// The Google service-account JSON (what `credentials.Certificate` reads) plus Tessera's own
    /// fields. `private_key` only in the answer that generated it.
    struct AccountWire: Encodable, Sendable {
        var type = "service_account"
        var project_id: String
        var private_key_id: String
        var private_key: String?
        var client_email: String
        var client_id: String
        /// Required by Google's client libraries; Tessera does not exchange service-account
        /// assertions for access tokens, so it names Google's endpoint as the format has it.
        var token_uri = "https://oauth2.googleapis.com/token"
        var name: String
        var accountId: String
        var displayName: String
        var tenantId: String?
    }

    struct ListedAccount: Encodable, Sendable {
        var name: String
        var accountId: String
        var displayName: String
        var clientEmail: String
        var clientId: String
        var privateKeyId: String
        var publicKeyPem: String
        var tenantId: String?
        var createTime: String
    }

    func name(_ account: ServiceAccount) -> String {
        let scope = account.owner.tenant.map { "projects/\(projectID)/tenants/\($0.key)" } ?? "projects/\(projectID)"
        return "\(scope)/serviceAccounts/\(account.accountId)"
    }

    struct CreateRequest: Decodable {
        var displayName: String?
        var publicKeyPem: String?
    }

    @Sendable func create(_ request: Request, context: AdminContext) async throws -> JSONResponse<AccountWire> {
        let body = try await request.decodeJSON(CreateRequest.self, context: context)
        return JSONResponse(
            try await create(
                owner: context.owner, displayName: body.displayName ?? "", publicKeyPem: body.publicKeyPem,
                logger: context.logger))
    }

    /// Creates an account with the given public key, or with a new key pair whose private half is in
    /// this answer only (the admin API and the console alike).
    func create(owner: Owner, displayName: String, publicKeyPem pem: String?, logger: Logger) async throws
        -> AccountWire
    {
        let publicKeyPem: String
        var privateKeyPem: String?
        if let pem {
            guard let key = try? _RSA.Signing.PublicKey(pemRepresentation: pem) else {
                throw FirebaseError.invalid(
                    .invalidConfig, "publicKeyPem must be a PEM RSA public key of at least 2048 bits.")
            }
            publicKeyPem = key.pemRepresentation
        } else {
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            privateKeyPem = key.pkcs8PEMRepresentation
            publicKeyPem = key.publicKey.pemRepresentation
        }
        let account = try await store.create(
            owner: owner, displayName: displayName, publicKeyPem: publicKeyPem, logger: logger)
        logger.info(
            "service account created",
            metadata: [
                "account.id": .string(account.accountId), "key.generated": .stringConvertible(privateKeyPem != nil),
            ])
        return AccountWire(
            project_id: projectID, private_key_id: account.privateKeyId,
            private_key: privateKeyPem.map { $0 + "\n" },
            client_email: account.clientEmail, client_id: account.clientId, name: name(account),
            accountId: account.accountId, displayName: account.displayName, tenantId: account.owner.tenantID)
    }

    struct ListResponse: Encodable, Sendable {
        var serviceAccounts: [ListedAccount]
        var nextPageToken: String?
    }

    /// `pageSize` (1–1000, default 100) and `pageToken` (the last id of the previous page),
    /// docs/protocol/admin.md#tesseras-own-admin-resources.
    @Sendable func list(_ request: Request, context: AdminContext) async throws -> JSONResponse<ListResponse> {
        let size = request.adminPageSize
        let page = Page(
            fetched: try await store.list(
                owner: context.owner, after: request.pageToken, limit: size + 1,
                logger: context.logger),
            size: size)
        return JSONResponse(
            ListResponse(
                serviceAccounts: page.rows.map {
                    ListedAccount(
                        name: name($0), accountId: $0.accountId, displayName: $0.displayName,
                        clientEmail: $0.clientEmail, clientId: $0.clientId, privateKeyId: $0.privateKeyId,
                        publicKeyPem: $0.publicKeyPem, tenantId: $0.owner.tenantID,
                        createTime: RFC3339.seconds($0.createTime)
                    )
                }, nextPageToken: page.nextToken(\.accountId)))
    }

    @Sendable func revoke(_ request: Request, context: AdminContext) async throws -> JSONResponse<EmptyObject> {
        let id = try context.parameters.require("account")
        guard
            try await store.revoke(
                accountId: id, owner: context.owner, logger: context.logger)
        else {
            throw FirebaseError.configurationNotFound
        }
        context.logger.info("service account revoked", metadata: ["account.id": .string(id)])
        return JSONResponse(EmptyObject())
    }
}

/// Custom-token verification (docs/protocol/tokens.md#token-rules, #custom-tokens): every rule, with the
/// answers Firebase gives.
enum CustomTokens {
    static let audience = "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"
    static let maximumLifetime: Int64 = 3600
    static let clockSkew: Int64 = 300

    struct Payload: Decodable {
        var iss: String?
        var sub: String?
        var aud: JSONValue?
        var iat: JSONValue?
        var exp: JSONValue?
        var uid: JSONValue?
        var claims: JSONValue?
        var tenant_id: String?
    }

    struct Verified: Sendable {
        var uid: String
        /// Validated claims text, nil when none.
        var claims: String?
    }

    static func invalid(_ detail: String) -> FirebaseError {
        FirebaseError.invalid(.invalidCustomToken, detail)
    }

    static func verify(
        _ token: String, scope: Scope, accounts: ServiceAccountStore, now: Date = Date(), logger: Logger
    ) async throws -> Verified {
        guard let header = try? JWS.header(of: token), let unverified = try? JWS.unverifiedPayload(of: token) else {
            throw invalid("The custom token format is incorrect. Please check the documentation.")
        }
        guard header.alg == "RS256" else { throw invalid("Custom tokens must be signed with RS256.") }
        let claimedIssuer = (try? JSONDecoder().decode(Payload.self, from: unverified))?.iss
        guard let account = try await accounts.signer(keyId: header.kid, issuer: claimedIssuer, logger: logger),
            let key = try? _RSA.Signing.PublicKey(pemRepresentation: account.publicKeyPem)
        else { throw invalid("The custom token is not signed by a registered service account.") }
        guard let data = try? JWS.verifyRS256(token, key: key) else {
            throw invalid("The custom token's signature is invalid.")
        }
        guard let payload = try? JSONDecoder().decode(Payload.self, from: data) else {
            throw invalid("The custom token's payload is not a JSON object.")
        }
        guard payload.aud?.stringValue == audience else { throw invalid("Invalid aud (audience) claim.") }
        guard payload.iss == account.clientEmail, payload.sub == account.clientEmail else {
            throw invalid("iss and sub must be the service account's client_email.")
        }
        guard let iat = payload.iat?.intValue, let exp = payload.exp?.intValue else {
            throw invalid("iat and exp are required.")
        }
        let nowSeconds = Int64(now.timeIntervalSince1970)
        guard exp > nowSeconds else { throw invalid("The custom token has expired.") }
        // Claims are any JSON integers: subtract without trapping on overflow.
        let (lifetime, overflow) = exp.subtractingReportingOverflow(iat)
        guard exp > iat, !overflow, lifetime <= maximumLifetime else {
            throw invalid("The custom token's lifetime (exp - iat) must not exceed one hour.")
        }
        guard iat <= nowSeconds + clockSkew else { throw invalid("The custom token was issued in the future.") }
        if Scope(wire: payload.tenant_id) != scope { throw FirebaseError.invalid(.tenantIdMismatch) }
        if let own = account.owner.tenant, own != scope { throw FirebaseError.invalid(.credentialMismatch) }
        guard let uid = payload.uid?.stringValue, !uid.isEmpty else {
            throw FirebaseError.invalid(.missingIdentifier)
        }
        guard uid.count <= 128 else { throw invalid("uid must be at most 128 characters.") }
        var claims: String?
        switch payload.claims {
        case nil, .null?: claims = nil
        case .object?:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            claims = try CustomClaims.validate(String(decoding: try encoder.encode(payload.claims), as: UTF8.self))
        default: throw FirebaseError.invalid(.invalidClaims)
        }
        return Verified(uid: uid, claims: claims)
    }
}

/// Custom-token sign-in (docs/protocol/tokens.md#custom-tokens): the directory holds the service accounts' public keys.
struct CustomTokenAccounts: Sendable {
    let client: Database
}

extension CustomTokenAccounts {
    /// `signInWithCustomToken` (docs/protocol/tokens.md#custom-tokens): verifies the token, creates the user
    /// on first use (`disabledUserSignup` applies) and starts a session that carries the token's claims.
    public func signInWithCustomToken(_ request: SignInWithCustomTokenRequest, logger: Logger) async throws
        -> SignInWithCustomTokenResponse
    {
        let scope = request.scope
        _ = try await ScopeFlags.read(client, scope: scope, logger: logger)
        let verified = try await CustomTokens.verify(
            request.token, scope: scope, accounts: ServiceAccountStore(client: client, projectID: ""), logger: logger)
        return try await client.transaction(logger: logger) { connection in
            let flags = try await ScopeFlags.read(connection, scope: scope, lock: true, logger: logger)
            let now = AccountRows.nowMillis()
            var isNewUser = false
            if !(try await AccountRows.lockUser(connection, scope: scope, localId: verified.uid, logger: logger)) {
                try await flags.admitNewAccount(connection, scope: scope, clientIP: request.clientIP, logger: logger)
                let inserted = try await connection.query(
                    """
                    INSERT INTO users (tenant_id, local_id, valid_since, created_at, last_login_at, last_refresh_at,
                        custom_auth)
                    VALUES (\(scope: scope), \(verified.uid), \(now / 1000), \(now), \(now), \(now), true)
                    ON CONFLICT (tenant_id, local_id) DO NOTHING RETURNING local_id
                    """, logger: logger)
                for try await _ in inserted.decode(String.self) { isNewUser = true }
                _ = try await AccountRows.lockUser(connection, scope: scope, localId: verified.uid, logger: logger)
            }
            guard
                let before = try await AccountRows.fetchUsers(
                    connection, scope: scope, localIds: [verified.uid], logger: logger
                ).first
            else { throw FirebaseError.internal }
            if before.disabled { throw FirebaseError.invalid(.userDisabled) }
            if !isNewUser {
                try await connection.query(
                    """
                    UPDATE users SET last_login_at = \(now), custom_auth = true, is_anonymous = false,
                        anonymous_due_at = NULL
                    WHERE tenant_id = \(scope: scope) AND local_id = \(verified.uid)
                    """, logger: logger)
            }
            let session = try await AccountRows.createSession(
                connection, scope: scope, localId: verified.uid, provider: "custom", authTime: now / 1000,
                refreshTokenHash: request.session.refreshTokenHash, expiresAt: request.session.expiresAt,
                extraClaims: verified.claims, logger: logger)
            guard
                let user = try await AccountRows.fetchUsers(
                    connection, scope: scope, localIds: [verified.uid], logger: logger
                )
                .first
            else { throw FirebaseError.internal }
            return SignInWithCustomTokenResponse(user: user, session: session, isNewUser: isNewUser)
        }
    }
}
