import Logging
import PostgresNIO
import TesseraShared

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
                try await flags.admitNewAccount(
                    connection, scope: scope, clientIP: request.clientIP, vouched: true, logger: logger)
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
