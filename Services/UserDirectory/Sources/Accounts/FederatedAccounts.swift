import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// Federated sign-in and linking (docs/protocol/accounts.md#accounts-and-providers,
/// #verified-email-and-automatic-linking, docs/protocol/federated.md#linking-a-federated-credential,
/// #federated-sign-in). The token service has verified the provider's credential; this decides, in one
/// transaction, which account it opens.
struct FederatedAccounts: Sendable {
    let client: Database
}

extension FederatedAccounts {
    /// The configuration the token service verifies a credential with: unknown providers are
    /// `INVALID_PROVIDER_ID`, ones the scope has not enabled `OPERATION_NOT_ALLOWED`.
    public func idpConfig(_ request: IdpConfigRequest, logger: Logger) async throws -> IdpConfigResponse {
        guard FederatedProviders.kind(of: request.providerId) != nil else {
            throw FirebaseError.invalid(.invalidProviderId)
        }
        let scope = request.scope
        return try await client.withConnection { connection in
            _ = try await ScopeFlags.read(connection, scope: scope, lock: false, logger: logger)
            guard
                let config = try await IdpConfigStore.get(
                    connection, scope: scope, providerId: request.providerId, logger: logger),
                config.enabled
            else {
                throw FirebaseError.invalid(
                    .operationNotAllowed, "The identity provider \(request.providerId) is not enabled.")
            }
            var answer = IdpConfigResponse(
                providerId: config.providerId, clientId: config.clientId, clientSecret: config.clientSecret,
                issuer: config.issuer)
            if FederatedProviders.isOIDCProviderID(config.providerId) { answer.responseCode = config.responseCode }
            answer.appleCodeFlow = config.appleCodeFlow
            return answer
        }
    }

    public func signInWithIdp(_ request: SignInWithIdpRequest, logger: Logger) async throws -> SignInWithIdpResponse {
        let scope = request.scope
        // Two first sign-ins of one new identity (or two providers with one new email) race on the
        // unique keys; the loser runs again and finds what the winner wrote.
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await client.transaction(logger: logger) { connection in
                    try await AccountRows.federatedSignIn(connection, scope: scope, request: request, logger: logger)
                }
            } catch let error as PSQLError where error.has(.uniqueViolation) && attempt < 3 {
                logger.debug("federated sign-in raced another; retrying")
            } catch let error as PSQLError where error.has(.uniqueViolation) {
                _ = error
                throw FirebaseError.invalid(.emailExists)
            }
        }
    }

}

extension AccountRows {
    static func federatedSignIn(
        _ connection: PostgresConnection, scope: Scope, request: SignInWithIdpRequest, logger: Logger
    ) async throws -> SignInWithIdpResponse {
        let identity = request.identity
        let flags = try await ScopeFlags.read(connection, scope: scope, lock: true, logger: logger)
        guard
            let config = try await IdpConfigStore.get(
                connection, scope: scope, providerId: identity.providerId, logger: logger),
            config.enabled
        else { throw FirebaseError.invalid(.operationNotAllowed) }
        let oneAccountPerEmail = !(try await allowDuplicateEmails(connection, logger: logger))
        let trusted =
            identity.email.map {
                FederatedProviders.isTrusted(
                    providerId: identity.providerId, email: $0, providerSaysVerified: identity.emailVerified,
                    configuredDomains: config.trustedEmailDomains)
            } ?? false
        let linkedTo = try await linkOwner(connection, scope: scope, identity: identity, logger: logger)
        let now = nowMillis()

        // A link (`linkTo`) is made by a signed-in user and asks for no second factor.
        func signedIn(_ localId: String, isNewUser: Bool, recycled: Bool) async throws -> SignInWithIdpResponse {
            let (user, session, challenge) = try await signIn(
                connection, scope: scope, localId: localId, provider: identity.providerId, nowMillis: now,
                session: request.session, logger: logger)
            var answer = SignInWithIdpResponse(
                outcome: challenge == nil ? .signedIn : .secondFactor, user: user, session: session,
                isNewUser: isNewUser, emailRecycled: recycled)
            answer.secondFactor = challenge
            return answer
        }

        // The user links a provider to its own account (docs/protocol/federated.md#linking-a-federated-credential).
        if let localId = request.linkTo {
            if linkedTo != nil { throw FirebaseError.invalid(.federatedUserIdAlreadyLinked) }
            guard try await lockUser(connection, scope: scope, localId: localId, logger: logger),
                let user = try await fetchUsers(connection, scope: scope, localIds: [localId], logger: logger).first
            else { throw FirebaseError.invalid(.userNotFound) }
            if oneAccountPerEmail, let email = identity.email, email != user.email,
                try await emailOwner(connection, scope: scope, email: email, logger: logger) != nil
            {
                throw FirebaseError.invalid(.emailExists)
            }
            let recycled = try await link(
                connection, scope: scope, localId: localId, identity: identity, logger: logger)
            if user.email == nil, oneAccountPerEmail, let email = identity.email {
                try await connection.query(
                    """
                    UPDATE users SET email = \(email), email_verified = \(trusted)
                    WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
                    """, logger: logger)
            } else if trusted, user.email == identity.email {
                try await markEmailVerified(connection, scope: scope, localId: localId, logger: logger)
            }
            try await fillProfile(
                connection, scope: scope, localId: localId, identity: identity, now: now, logger: logger)
            let (linked, session) = try await startSession(
                connection, scope: scope, localId: localId, provider: identity.providerId, nowMillis: now,
                session: request.session, logger: logger)
            return SignInWithIdpResponse(
                outcome: .signedIn, user: linked, session: session, isNewUser: false, emailRecycled: recycled)
        }

        // A returning identity (docs/protocol/federated.md#federated-sign-in, first case).
        if let localId = linkedTo {
            guard try await lockUser(connection, scope: scope, localId: localId, logger: logger),
                let user = try await fetchUsers(connection, scope: scope, localIds: [localId], logger: logger).first
            else { throw FirebaseError.internal }
            if user.disabled { throw FirebaseError.invalid(.userDisabled) }
            try await connection.query(
                """
                UPDATE provider_links SET email = \(identity.email), display_name = \(identity.displayName),
                    photo_url = \(identity.photoUrl), screen_name = \(identity.screenName)
                WHERE tenant_id = \(scope: scope) AND provider_id = \(identity.providerId) AND raw_id = \(identity.rawId)
                """, logger: logger)
            if trusted, user.email == identity.email, !user.emailVerified {
                try await markEmailVerified(connection, scope: scope, localId: localId, logger: logger)
            }
            try await fillProfile(
                connection, scope: scope, localId: localId, identity: identity, now: now, logger: logger)
            return try await signedIn(localId, isNewUser: false, recycled: false)
        }

        // The email belongs to an account: the four cases of
        // docs/protocol/accounts.md#verified-email-and-automatic-linking.
        if oneAccountPerEmail, let email = identity.email,
            let localId = try await emailOwner(connection, scope: scope, email: email, logger: logger)
        {
            guard try await lockUser(connection, scope: scope, localId: localId, logger: logger),
                let user = try await fetchUsers(connection, scope: scope, localIds: [localId], logger: logger).first
            else { throw FirebaseError.internal }
            guard trusted else {
                // An untrusted provider never joins an existing account by email: the user must sign
                // in with a method it has and link this one.
                return SignInWithIdpResponse(
                    outcome: .needConfirmation, user: nil, session: nil,
                    verifiedProvider: user.providerUserInfo.map(\.providerId).filter {
                        $0 != "password" && $0 != "phone"
                    })
            }
            if user.disabled { throw FirebaseError.invalid(.userDisabled) }
            if !user.emailVerified {
                try await takeOver(
                    connection, scope: scope, localId: localId, nowMillis: now, by: identity.providerId, logger: logger)
            }
            let recycled = try await link(
                connection, scope: scope, localId: localId, identity: identity, logger: logger)
            try await markEmailVerified(connection, scope: scope, localId: localId, logger: logger)
            try await fillProfile(
                connection, scope: scope, localId: localId, identity: identity, now: now, logger: logger)
            return try await signedIn(localId, isNewUser: false, recycled: recycled)
        }

        // A new user, its profile from the provider (docs/protocol/accounts.md#accounts-and-providers). With
        // duplicate emails allowed the email stays on the provider entry only
        // (docs/protocol/federated.md#federated-sign-in). A re-authentication proves who a signed-in user is;
        // it never makes a new one.
        if request.autoCreate == false { throw FirebaseError.invalid(.userNotFound) }
        try await flags.admitNewAccount(connection, scope: scope, clientIP: request.clientIP, logger: logger)
        let localId = Secrets.randomAlphanumeric(28)
        let email = oneAccountPerEmail ? identity.email : nil
        try await connection.query(
            """
            INSERT INTO users (tenant_id, local_id, email, email_verified, display_name, photo_url, valid_since,
                created_at, last_login_at, last_refresh_at)
            VALUES (\(scope: scope), \(localId), \(email), \(email != nil && trusted), \(identity.displayName),
                \(identity.photoUrl), \(now / 1000), \(now), \(now), \(now))
            """, logger: logger)
        _ = try await link(connection, scope: scope, localId: localId, identity: identity, logger: logger)
        return try await signedIn(localId, isNewUser: true, recycled: false)
    }

    static func allowDuplicateEmails(_ connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let rows = try await connection.query("SELECT allow_duplicate_emails FROM project_config", logger: logger)
        for try await value in rows.decode(Bool.self) { return value }
        return false
    }

    /// The user a (provider, raw id) is linked to.
    static func linkOwner(
        _ connection: PostgresConnection, scope: Scope, identity: FederatedIdentity, logger: Logger
    ) async throws -> String? {
        let rows = try await connection.query(
            """
            SELECT local_id FROM provider_links
            WHERE tenant_id = \(scope: scope) AND provider_id = \(identity.providerId) AND raw_id = \(identity.rawId)
            """, logger: logger)
        for try await localId in rows.decode(String.self) { return localId }
        return nil
    }

    static func emailOwner(_ connection: PostgresConnection, scope: Scope, email: String, logger: Logger)
        async throws -> String?
    {
        let rows = try await connection.query(
            "SELECT local_id FROM users WHERE tenant_id = \(scope: scope) AND email = \(email)", logger: logger)
        for try await localId in rows.decode(String.self) { return localId }
        return nil
    }

    /// The user `createAuthUri` describes for an email (docs/design-notes.md, "Federated providers"):
    /// the account whose email it is, else one whose linked provider has it (the same person signs in
    /// with that provider under it). With duplicate emails allowed, only an account that has an email
    /// of its own counts.
    static func userForIdentifier(
        _ connection: PostgresConnection, scope: Scope, email: String, oneAccountPerEmail: Bool, logger: Logger
    ) async throws -> String? {
        if let localId = try await emailOwner(connection, scope: scope, email: email, logger: logger) {
            return localId
        }
        let rows = try await connection.query(
            """
            SELECT l.local_id FROM provider_links l
            JOIN users u ON u.tenant_id = l.tenant_id AND u.local_id = l.local_id
            WHERE l.tenant_id = \(scope: scope) AND l.email = \(email) AND (\(oneAccountPerEmail) OR u.email IS NOT NULL)
            ORDER BY l.local_id LIMIT 1
            """, logger: logger)
        for try await localId in rows.decode(String.self) { return localId }
        return nil
    }

    /// Links the identity to the user, replacing a link of the same provider (at most one per provider,
    /// docs/protocol/accounts.md#the-user-record), and ends the user's anonymity in the same statement: a
    /// user with a linked provider is permanent, whoever linked it (an admin's `linkProviderUserInfo`
    /// too), so the cleanup never deletes it (docs/protocol/admin.md#anonymous-cleanup). True when a
    /// different account of that provider was replaced.
    static func link(
        _ connection: PostgresConnection, scope: Scope, localId: String, identity: FederatedIdentity, logger: Logger
    ) async throws -> Bool {
        let removed = try await connection.query(
            """
            DELETE FROM provider_links
            WHERE tenant_id = \(scope: scope) AND local_id = \(localId) AND provider_id = \(identity.providerId)
            RETURNING raw_id
            """, logger: logger)
        var recycled = false
        for try await rawId in removed.decode(String.self) where rawId != identity.rawId { recycled = true }
        try await connection.query(
            """
            WITH linked AS (
                INSERT INTO provider_links (tenant_id, provider_id, raw_id, local_id, federated_id, email,
                    display_name, photo_url, screen_name)
                VALUES (\(scope: scope), \(identity.providerId), \(identity.rawId), \(localId), \(identity.rawId),
                    \(identity.email), \(identity.displayName), \(identity.photoUrl), \(identity.screenName))
                RETURNING local_id
            )
            UPDATE users SET is_anonymous = false, anonymous_due_at = NULL
            WHERE tenant_id = \(scope: scope) AND local_id IN (SELECT local_id FROM linked) AND is_anonymous
            """, logger: logger)
        return recycled
    }

    /// Fills the profile fields that are still empty (never overwrites,
    /// docs/protocol/accounts.md#accounts-and-providers), records the sign-in, and ends anonymity: a user
    /// with a linked provider is permanent.
    static func fillProfile(
        _ connection: PostgresConnection, scope: Scope, localId: String, identity: FederatedIdentity, now: Int64,
        logger: Logger
    ) async throws {
        try await connection.query(
            """
            UPDATE users SET display_name = coalesce(display_name, \(identity.displayName)),
                photo_url = coalesce(photo_url, \(identity.photoUrl)), last_login_at = \(now),
                is_anonymous = false, anonymous_due_at = NULL
            WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
            """, logger: logger)
    }

    static func markEmailVerified(_ connection: PostgresConnection, scope: Scope, localId: String, logger: Logger)
        async throws
    {
        try await connection.query(
            "UPDATE users SET email_verified = true WHERE tenant_id = \(scope: scope) AND local_id = \(localId)",
            logger: logger)
    }

    /// A trusted method (a trusted provider, docs/protocol/accounts.md#verified-email-and-automatic-linking,
    /// or an email link, docs/protocol/accounts.md#accounts-and-providers) takes over an account whose email
    /// nobody proved: whoever set the password or linked the untrusted providers may not own the address. The
    /// password and every provider go, older sessions end, and codes sent before (an email change to the
    /// other party's address, say) die too.
    static func takeOver(
        _ connection: PostgresConnection, scope: Scope, localId: String, nowMillis now: Int64, by method: String,
        logger: Logger
    ) async throws {
        try await connection.query(
            """
            UPDATE users SET password_algorithm = NULL, password_params = NULL, password_salt = NULL,
                password_hash = NULL, password_updated_at = NULL, valid_since = \(now / 1000)
            WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
            """, logger: logger)
        try await connection.query(
            "DELETE FROM provider_links WHERE tenant_id = \(scope: scope) AND local_id = \(localId)", logger: logger)
        try await revokeSessions(connection, scope: scope, localId: localId, reason: "account_takeover", logger: logger)
        try await connection.query(
            """
            UPDATE oob_codes SET used_at = now()
            WHERE tenant_id = \(scope: scope) AND local_id = \(localId) AND used_at IS NULL
            """, logger: logger)
        logger.notice(
            "a trusted sign-in method took over an account with an unverified email",
            metadata: ["tenant.id": .string(scope.key), "user.id": .string(localId), "provider.id": .string(method)])
    }
}
