import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// Email-link (passwordless) sign-in (docs/protocol/accounts.md#accounts-and-providers, #email-link-sign-in):
/// the EMAIL_SIGNIN code mailed by `sendOobCode` proves the address, so completing it signs in (or signs up)
/// the address's user with a verified email, or gives the address to a signed-in user; it is a trusted method
/// for docs/protocol/accounts.md#verified-email-and-automatic-linking. Email-link sign-in and linking
/// (docs/protocol/accounts.md#accounts-and-providers, #email-link-sign-in).
struct EmailLinkAccounts: Sendable {
    let client: Database
    /// How long the RECOVER_EMAIL code of an address change's notice lives (`TESSERA_OOB_CODE_TTL`).
    var oobCodeTTL: Duration = .seconds(3600)
}

extension EmailLinkAccounts {
    public func signInWithEmailLink(_ request: SignInWithEmailLinkRequest, logger: Logger) async throws
        -> SignInWithEmailLinkResponse
    {
        let scope = request.scope
        let flags = try await ScopeFlags.read(client, scope: scope, logger: logger)
        guard flags.enableEmailLinkSignin else { throw FirebaseError.invalid(.operationNotAllowed) }
        let code = try await AccountRows.readCode(client, request.oobCode, scope: scope, logger: logger)
        guard code.type == .emailSignIn else { throw FirebaseError.invalid(.invalidOobCode) }
        guard code.email == request.email else {
            throw FirebaseError.invalid(.invalidEmail, "The email provided does not match the sign-in email address.")
        }
        do {
            return try await client.transaction(logger: logger) { connection in
                let flags = try await ScopeFlags.read(connection, scope: scope, lock: true, logger: logger)
                guard flags.enableEmailLinkSignin else { throw FirebaseError.invalid(.operationNotAllowed) }
                // One use only, even when two tabs complete the same link at once.
                try await AccountRows.consumeCode(connection, hash: code.hash, logger: logger)
                let now = AccountRows.nowMillis()
                let owner = try await AccountRows.userID(connection, scope: scope, email: request.email, logger: logger)
                let localId: String
                var isNewUser = false
                if let linkTo = request.linkTo {
                    // The signed-in user takes the address; no other account may have it.
                    if let owner, owner != linkTo { throw FirebaseError.invalid(.emailExists) }
                    guard try await AccountRows.lockUser(connection, scope: scope, localId: linkTo, logger: logger),
                        let user = try await AccountRows.fetchUsers(
                            connection, scope: scope, localIds: [linkTo], logger: logger
                        ).first
                    else { throw FirebaseError.invalid(.userNotFound) }
                    if let previous = user.email, previous != request.email {
                        // A changed sign-in email ends the older sessions, as every email change does
                        // (docs/protocol/tokens.md#token-rules).
                        try await connection.query(
                            "UPDATE users SET valid_since = \(now / 1000) WHERE tenant_id = \(scope: scope) AND local_id = \(linkTo)",
                            logger: logger)
                        try await AccountRows.revokeSessions(
                            connection, scope: scope, localId: linkTo, reason: "credential_change", logger: logger)
                        // …and the old address is told (docs/design-notes.md, "Out-of-band codes and mail").
                        try await OobAccounts.queueRecoverEmail(
                            connection, scope: scope, before: user, newEmail: request.email,
                            linkPrefix: request.recoverLinkPrefix, ttl: oobCodeTTL, logger: logger)
                    }
                    localId = linkTo
                } else if let owner {
                    guard try await AccountRows.lockUser(connection, scope: scope, localId: owner, logger: logger),
                        let user = try await AccountRows.fetchUsers(
                            connection, scope: scope, localIds: [owner], logger: logger
                        ).first
                    else { throw FirebaseError.invalid(.userNotFound) }
                    if user.disabled { throw FirebaseError.invalid(.userDisabled) }
                    // The mailbox's owner proves an address nobody had proved: whoever set the password or
                    // linked untrusted providers may not own it
                    // (the takeover row of docs/protocol/accounts.md#verified-email-and-automatic-linking).
                    if !user.emailVerified {
                        try await AccountRows.takeOver(
                            connection, scope: scope, localId: owner, nowMillis: now, by: "emailLink", logger: logger)
                    }
                    localId = owner
                } else {
                    try await flags.admitNewAccount(
                        connection, scope: scope, clientIP: request.clientIP, logger: logger)
                    localId = Secrets.randomAlphanumeric(28)
                    try await connection.query(
                        """
                        INSERT INTO users (tenant_id, local_id, valid_since, created_at, last_refresh_at)
                        VALUES (\(scope: scope), \(localId), \(now / 1000), \(now), \(now))
                        """, logger: logger)
                    isNewUser = true
                }
                // The address is proven: verified, and the `password` provider entry appears
                // (docs/protocol/accounts.md#the-user-record). An anonymous user becomes permanent, and the
                // cleanup no longer counts it.
                try await connection.query(
                    """
                    UPDATE users SET email = \(request.email), email_verified = true, email_link_signin = true,
                        last_login_at = \(now), is_anonymous = false, anonymous_due_at = NULL
                    WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
                    """, logger: logger)
                // A link is made by a signed-in user and asks for no second factor.
                if request.linkTo != nil {
                    let (user, session) = try await AccountRows.startSession(
                        connection, scope: scope, localId: localId, provider: "password", nowMillis: now,
                        session: request.session, logger: logger)
                    return SignInWithEmailLinkResponse(user: user, session: session, isNewUser: isNewUser)
                }
                let (user, session, challenge) = try await AccountRows.signIn(
                    connection, scope: scope, localId: localId, provider: "password", nowMillis: now,
                    session: request.session, logger: logger)
                var answer = SignInWithEmailLinkResponse(user: user, session: session, isNewUser: isNewUser)
                answer.secondFactor = challenge
                return answer
            }
        } catch let error as PSQLError where error.has(.uniqueViolation) {
            // Another account took the address between the read and the write.
            throw FirebaseError.invalid(.emailExists)
        }
    }
}
