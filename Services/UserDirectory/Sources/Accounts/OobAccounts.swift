import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// Out-of-band codes (docs/protocol/accounts.md#end-user-endpoints sendOobCode, resetPassword,
/// update{oobCode}; docs/protocol/accounts.md#email-delivery): single use, expiring, stored as SHA-256; the
/// mail that carries a code is queued in the same transaction. Out-of-band codes
/// (docs/protocol/accounts.md#project-and-tenant-switches, #email-enumeration-protection, #emailverified,
/// #email-delivery): sending them (and their mail), password resets and applying verification and
/// email-change codes.
struct OobAccounts: Sendable {
    let client: Database
    let hasher: PasswordHasher
    let hashKey: HashKeyStore
    let oobCodeTTL: Duration
    /// Mail work done after the answer (protected password resets).
    let detachedWork: DetachedWork
}

extension OobAccounts {
    public func sendOobCode(_ request: SendOobCodeRequest, logger: Logger) async throws -> SendOobCodeResponse {
        let scope = request.scope
        let flags = try await ScopeFlags.read(client, scope: scope, logger: logger)
        if request.requestType == .emailSignIn, !flags.enableEmailLinkSignin {
            throw FirebaseError.invalid(.operationNotAllowed)
        }
        let limit = flags.rateLimits.oobEmailsPerAccountPerHour
        // An end user's request by address counts against the address, whether an account has it or
        // not: were only known addresses counted, the limit would tell them apart under protection.
        let countsByAddress = request.localId == nil && !request.returnLink
        // An end user's reset or sign-in link under protection (issues #23 and #35): after the
        // checks every address gets, the answer goes at once and the per-account work (the lookup,
        // the code, the mail) follows it, so the time taken tells nothing about the address.
        let answersFirst = request.requestType == .passwordReset || request.requestType == .emailSignIn
        if flags.emailPrivacy, countsByAddress, answersFirst, let email = request.email,
            let detached = detachedWork.admit()
        {
            try await client.transaction(logger: logger) { connection in
                try await RateLimiter.hit(
                    connection, scope: scope, bucket: "oob_email", key: "address:" + email, limit: limit,
                    logger: logger)
            }
            Task.detached {
                defer { detached.done() }
                do {
                    _ = try await issueCode(request, scope: scope, flags: flags, countsByAddress: false, logger: logger)
                } catch {
                    logger.warning(
                        "out-of-band mail not queued",
                        metadata: [
                            "tenant.id": .string(scope.key), "oob.type": .string(request.requestType.rawValue),
                            "error": "\(String(reflecting: error))",
                        ])
                }
            }
            return SendOobCodeResponse(email: email)
        }
        return try await issueCode(
            request, scope: scope, flags: flags, countsByAddress: countsByAddress, logger: logger)
    }

    /// The per-account part of `sendOobCode`: finds the user, stores the code and queues its mail
    /// (or returns the link), in one transaction. `countsByAddress`: the request by address is
    /// counted here (else the caller counted it).
    func issueCode(
        _ request: SendOobCodeRequest, scope: Scope, flags: ScopeFlags, countsByAddress: Bool, logger: Logger
    ) async throws -> SendOobCodeResponse {
        let signIn = request.requestType == .emailSignIn
        let ttlSeconds = oobCodeTTL.timeInterval
        let limit = flags.rateLimits.oobEmailsPerAccountPerHour
        let byAddress = request.localId == nil && !request.returnLink
        return try await client.transaction(logger: logger) { connection in
            if countsByAddress, let email = request.email {
                try await RateLimiter.hit(
                    connection, scope: scope, bucket: "oob_email", key: "address:" + email, limit: limit,
                    logger: logger)
            }
            let localId: String?
            // A user is named by a verified ID token (`localId`) or, for resets, sign-in links and
            // admins, by email. A sign-in link may go to an address no account has: it signs up.
            if request.localId == nil {
                guard let email = request.email else { throw FirebaseError.invalid(.missingEmail) }
                if let id = try await AccountRows.userID(connection, scope: scope, email: email, logger: logger) {
                    localId = id
                } else if signIn {
                    localId = nil
                } else {
                    // An admin's verification or email-change code for an unknown address: USER_NOT_FOUND. A
                    // reset's: EMAIL_NOT_FOUND, or under protection the same answer as for a known address,
                    // without mail, code or link, to an admin too
                    // (docs/protocol/accounts.md#email-enumeration-protection; the emulator's oob.spec
                    // "non-existent user with improved email privacy enabled").
                    if request.requestType != .passwordReset { throw FirebaseError.invalid(.userNotFound) }
                    if flags.emailPrivacy { return SendOobCodeResponse(email: request.email) }
                    throw FirebaseError.invalid(.emailNotFound)
                }
            } else {
                guard let id = request.localId else { throw FirebaseError.invalid(.missingIdToken) }
                localId = id
            }
            var user: UserRecord?
            if let localId {
                guard try await AccountRows.lockUser(connection, scope: scope, localId: localId, logger: logger),
                    let found = try await AccountRows.fetchUsers(
                        connection, scope: scope, localIds: [localId], logger: logger
                    )
                    .first
                else { throw FirebaseError.invalid(.userNotFound) }
                user = found
                // Mails per account are limited for end users; an admin asking for the link is not.
                if !request.returnLink && !byAddress {
                    try await RateLimiter.hit(
                        connection, scope: scope, bucket: "oob_email", key: localId, limit: limit, logger: logger)
                }
            }
            let recipient: String
            switch request.requestType {
            case .emailSignIn:
                guard let email = request.email else { throw FirebaseError.invalid(.missingEmail) }
                recipient = email
            case .passwordReset, .verifyEmail:
                guard let email = user?.email else { throw FirebaseError.invalid(.missingEmail) }
                recipient = email
            case .verifyAndChangeEmail:
                guard let newEmail = request.newEmail else { throw FirebaseError.invalid(.missingNewEmail) }
                if newEmail != user?.email,
                    try await AccountRows.userID(connection, scope: scope, email: newEmail, logger: logger) != nil
                {
                    throw FirebaseError.invalid(.emailExists)
                }
                recipient = newEmail
            case .recoverEmail:
                // Only an email change queues one (`queueRecoverEmail`); `OobRequestType.parse` refuses it.
                throw FirebaseError.invalidArgument("Invalid value at 'request_type': RECOVER_EMAIL")
            }
            // The answer names the account's address; for an email change that is the current one,
            // not the new one the mail goes to (the emulator's oob.spec, "verify and change email").
            let answered = request.requestType == .verifyAndChangeEmail ? user?.email ?? recipient : recipient
            let code = Base64URL.encode(Secrets.randomBytes(32))
            try await connection.query(
                """
                INSERT INTO oob_codes (code_hash, tenant_id, local_id, request_type, email, new_email, expires_at,
                    credential_seq)
                VALUES (\(Secrets.tokenHash(code)), \(scope: scope), \(localId), \(request.requestType.rawValue),
                    \(signIn ? recipient : user?.email ?? recipient), \(request.newEmail),
                    now() + make_interval(secs => \(ttlSeconds)),
                    coalesce((SELECT credential_seq FROM users WHERE tenant_id = \(scope: scope) AND local_id = \(localId)), 0))
                """, logger: logger)
            var link = request.linkPrefix + "&oobCode=" + code
            if let continueUrl = request.continueUrl,
                let encoded = continueUrl.addingPercentEncoding(withAllowedCharacters: .urlQueryValueAllowed)
            {
                link += "&continueUrl=" + encoded
            }
            if request.returnLink {
                return SendOobCodeResponse(email: answered, oobCode: code, oobLink: link)
            }
            let appName = try await AccountRows.appName(connection, scope: scope, logger: logger)
            let template =
                try await MailTemplateStore.read(connection, scope: scope, type: request.requestType, logger: logger)
                ?? MailTemplate.standard(request.requestType)
            let mail = template.render(
                appName: appName, link: link, email: signIn ? recipient : user?.email ?? recipient,
                newEmail: request.newEmail, displayName: user?.displayName)
            try await connection.query(
                """
                INSERT INTO mail_outbox (tenant_id, recipient, subject, body)
                VALUES (\(scope: scope), \(recipient), \(mail.subject), \(mail.body))
                """, logger: logger)
            logger.info(
                "out-of-band code queued",
                metadata: [
                    "tenant.id": .string(scope.key), "user.id": .string(localId ?? "-"),
                    "oob.type": .string(request.requestType.rawValue),
                ])
            return SendOobCodeResponse(email: answered)
        }
    }

    /// `accounts:resetPassword`: with a new password, consumes a PASSWORD_RESET code and sets the
    /// password (the email is proven, so it becomes verified; every older session ends); without,
    /// tells what the code is for and leaves it unused.
    public func resetPassword(_ request: ResetPasswordRequest, logger: Logger) async throws -> OobCodeResponse {
        let scope = request.scope
        let flags = try await ScopeFlags.read(client, scope: scope, logger: logger)
        let code = try await AccountRows.readCode(client, request.oobCode, scope: scope, logger: logger)
        guard let newPassword = request.newPassword else {
            return OobCodeResponse(requestType: code.type, email: code.email, newEmail: code.newEmail, user: nil)
        }
        if !flags.allowPasswordSignup { throw FirebaseError.invalid(.passwordLoginDisabled) }
        guard code.type == .passwordReset, let localId = code.localId else {
            throw FirebaseError.invalid(.invalidOobCode)
        }
        let stored = try await hasher.hash(
            newPassword, key: try await hashKey.get(client, scope: scope, logger: logger).own)
        return try await client.transaction(logger: logger) { connection in
            try await AccountRows.consumeCode(connection, hash: code.hash, logger: logger)
            let now = AccountRows.nowMillis()
            // `before.email_verified`: the row as it was, read in the same statement (the old
            // version of the updated row, which this statement's FROM sees).
            let updated = try await connection.query(
                """
                UPDATE users u SET password_algorithm = \(stored.algorithm), password_params = \(stored.params),
                    password_salt = \(stored.salt), password_hash = \(stored.hash), password_updated_at = \(now),
                    email_verified = true, valid_since = \(now / 1000), is_anonymous = false, anonymous_due_at = NULL
                FROM users before
                WHERE u.tenant_id = \(scope: scope) AND u.local_id = \(localId) AND u.email = \(code.email)
                    AND before.tenant_id = u.tenant_id AND before.local_id = u.local_id
                RETURNING before.email_verified
                """, logger: logger)
            var wasVerified: Bool?
            for try await verified in updated.decode(Bool.self) { wasVerified = verified }
            // The account is gone or its email changed since the code was sent.
            guard let wasVerified else { throw FirebaseError.invalid(.invalidOobCode) }
            if !wasVerified {
                // The mailbox's owner proves the address for the first time: providers linked while nobody
                // had (by whoever created the account, perhaps, to keep a way in) are unlinked, as a trusted
                // provider's takeover does (docs/protocol/accounts.md#verified-email-and-automatic-linking).
                try await connection.query(
                    "DELETE FROM provider_links WHERE tenant_id = \(scope: scope) AND local_id = \(localId)",
                    logger: logger)
                // Nor may a notice sent before give the account back to another address (a recovery
                // code outlives credential changes, `readCode`).
                try await connection.query(
                    """
                    UPDATE oob_codes SET used_at = now()
                    WHERE tenant_id = \(scope: scope) AND local_id = \(localId) AND request_type = 'RECOVER_EMAIL'
                        AND used_at IS NULL
                    """, logger: logger)
            }
            try await AccountRows.revokeSessions(
                connection, scope: scope, localId: localId, reason: "password_reset", logger: logger)
            logger.info("password reset", metadata: ["tenant.id": .string(scope.key), "user.id": .string(localId)])
            return OobCodeResponse(requestType: code.type, email: code.email, newEmail: nil, user: nil)
        }
    }

    /// `accounts:update{oobCode}`: applies a VERIFY_EMAIL, VERIFY_AND_CHANGE_EMAIL or RECOVER_EMAIL
    /// code. A code whose address another account has meanwhile is used up all the same and answers
    /// `EMAIL_EXISTS` (the emulator's setAccountInfo.spec, "disallow resetting an email").
    public func applyOobCode(_ request: ApplyOobCodeRequest, logger: Logger) async throws -> OobCodeResponse {
        let scope = request.scope
        _ = try await ScopeFlags.read(client, scope: scope, logger: logger)
        let code = try await AccountRows.readCode(client, request.oobCode, scope: scope, logger: logger)
        guard code.type == .verifyEmail || code.type == .verifyAndChangeEmail || code.type == .recoverEmail,
            let localId = code.localId
        else {
            throw FirebaseError.invalid(.invalidOobCode)
        }
        do {
            return try await client.transaction(logger: logger) { connection in
                // Lock first, then read: the row read is the row this transaction changes. The user's
                // row before its codes, the order the other flows take them in.
                guard try await AccountRows.lockUser(connection, scope: scope, localId: localId, logger: logger),
                    let before = try await AccountRows.fetchUsers(
                        connection, scope: scope, localIds: [localId], logger: logger
                    ).first
                else { throw FirebaseError.invalid(.invalidOobCode) }
                try await AccountRows.consumeCode(connection, hash: code.hash, logger: logger)
                let now = AccountRows.nowMillis()
                // The address the account has afterwards; verified, as the mail that carried the code
                // went to it.
                let email: String
                switch code.type {
                case .verifyAndChangeEmail:
                    // The account must still have the address the code was sent for.
                    guard before.email == code.email, let newEmail = code.newEmail else {
                        throw FirebaseError.invalid(.invalidOobCode)
                    }
                    email = newEmail
                case .recoverEmail:
                    // Whatever the address became since (another change, by whoever holds a session),
                    // the old one comes back.
                    email = code.email
                default:
                    guard before.email == code.email else { throw FirebaseError.invalid(.invalidOobCode) }
                    email = code.email
                }
                let changing = code.type != .verifyEmail
                try await connection.query(
                    """
                    UPDATE users SET email_verified = true, email = \(email),
                        valid_since = CASE WHEN \(changing) THEN \(now / 1000) ELSE valid_since END
                    WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
                    """, logger: logger)
                if changing {
                    // A new address ends the older sessions, as every email change does; a restored
                    // one too: it undoes what may have been a takeover (docs/design-notes.md,
                    // "Out-of-band codes and mail").
                    try await AccountRows.revokeSessions(
                        connection, scope: scope, localId: localId,
                        reason: code.type == .recoverEmail ? "email_recovered" : "credential_change", logger: logger)
                }
                if code.type == .verifyAndChangeEmail {
                    try await Self.queueRecoverEmail(
                        connection, scope: scope, before: before, newEmail: email,
                        linkPrefix: request.recoverLinkPrefix, ttl: oobCodeTTL, logger: logger)
                }
                if code.type == .recoverEmail {
                    logger.notice(
                        "sign-in email restored",
                        metadata: ["tenant.id": .string(scope.key), "user.id": .string(localId)])
                }
                guard
                    let user = try await AccountRows.fetchUsers(
                        connection, scope: scope, localIds: [localId], logger: logger
                    ).first
                else { throw FirebaseError.internal }
                // A restored address is the answer's `email`, with no `newEmail` (setAccountInfo.spec).
                return OobCodeResponse(
                    requestType: code.type, email: code.type == .recoverEmail ? email : code.email,
                    newEmail: code.type == .recoverEmail ? nil : code.newEmail, user: user)
            }
        } catch let error as PSQLError where error.has(.uniqueViolation) {
            // Another account has the address: the code is used up all the same (a second try would
            // only meet the same answer). A concurrent use may have won meanwhile: then it is used.
            _ = try? await client.transaction(logger: logger) { connection in
                try await AccountRows.consumeCode(connection, hash: code.hash, logger: logger)
            }
            throw FirebaseError.invalid(.emailExists)
        }
    }

    /// The notice of an email change, mailed to the old address in the transaction of the change: a
    /// RECOVER_EMAIL code that gives the old address back (`applyOobCode`). Only for a user that had
    /// an address and is not anonymous (the emulator's setAccountInfo.spec, "anon user updates
    /// email"). Without a link (no public URL, a request from a host that is no authorized domain)
    /// the change is refused: it may not happen unannounced.
    static func queueRecoverEmail(
        _ connection: PostgresConnection, scope: Scope, before: UserRecord, newEmail: String?, linkPrefix: String?,
        ttl: Duration, logger: Logger
    ) async throws {
        guard let oldEmail = before.email, let newEmail, oldEmail != newEmail, !before.isAnonymous else { return }
        guard let linkPrefix else {
            throw FirebaseError.invalid(
                .unauthorizedDomain,
                "The request's host is not an authorized domain; set TESSERA_PUBLIC_URL or TESSERA_ACTION_URL")
        }
        // The first address the account had before any change is kept
        // (docs/protocol/accounts.md#the-user-record `initialEmail`).
        try await connection.query(
            """
            UPDATE users SET initial_email = \(oldEmail)
            WHERE tenant_id = \(scope: scope) AND local_id = \(before.localId) AND initial_email IS NULL
            """, logger: logger)
        let code = Base64URL.encode(Secrets.randomBytes(32))
        // `credential_seq` is not compared for this type (`readCode`): the notice must outlive what a
        // holder of the account's sessions changes next (its password, say).
        try await connection.query(
            """
            INSERT INTO oob_codes (code_hash, tenant_id, local_id, request_type, email, new_email, expires_at)
            VALUES (\(Secrets.tokenHash(code)), \(scope: scope), \(before.localId), \(OobRequestType.recoverEmail.rawValue),
                \(oldEmail), \(newEmail), now() + make_interval(secs => \(ttl.timeInterval)))
            """, logger: logger)
        let appName = try await AccountRows.appName(connection, scope: scope, logger: logger)
        let template =
            try await MailTemplateStore.read(connection, scope: scope, type: .recoverEmail, logger: logger)
            ?? MailTemplate.standard(.recoverEmail)
        let mail = template.render(
            appName: appName, link: linkPrefix + "&oobCode=" + code, email: oldEmail, newEmail: newEmail,
            displayName: before.displayName)
        try await connection.query(
            """
            INSERT INTO mail_outbox (tenant_id, recipient, subject, body)
            VALUES (\(scope: scope), \(oldEmail), \(mail.subject), \(mail.body))
            """, logger: logger)
        logger.info(
            "out-of-band code queued",
            metadata: [
                "tenant.id": .string(scope.key), "user.id": .string(before.localId),
                "oob.type": .string(OobRequestType.recoverEmail.rawValue),
            ])
    }

    struct StoredCode {
        var hash: String
        /// nil: a sign-in link sent to an address no account had.
        var localId: String?
        var type: OobRequestType
        var email: String
        var newEmail: String?
    }

}

extension CharacterSet {
    /// Characters that may stand unescaped in a query value.
    static let urlQueryValueAllowed: CharacterSet = {
        var set = CharacterSet.urlQueryAllowed
        set.remove(charactersIn: "&=+?#")
        return set
    }()
}

extension AccountRows {
    /// A code that exists in this scope, unused and unexpired, and sent for the credentials its user
    /// still has: a password reset, an email change, a disable, an account takeover or an admin's
    /// revocation after it was sent moved the user's `credential_seq` (migration 14's trigger), and the
    /// code carries the sequence it was sent at. A sequence, not clocks: a change a millisecond after
    /// the code was sent ends it. Except a RECOVER_EMAIL code: it undoes an email change whoever made
    /// it, so what they change next must not end it; it needs only its user. An email-link code of a
    /// user disabled since answers `USER_DISABLED` (the emulator's emailLink.spec).
    static func readCode(_ client: Database, _ code: String, scope: Scope, logger: Logger) async throws
        -> OobAccounts.StoredCode
    {
        let hash = Secrets.tokenHash(code)
        let rows = try await client.query(
            """
            SELECT c.local_id, c.request_type, c.email, c.new_email, c.used_at IS NOT NULL,
                c.local_id IS NOT NULL AND (u.local_id IS NULL OR (c.request_type <> 'RECOVER_EMAIL'
                    AND c.credential_seq IS DISTINCT FROM u.credential_seq)),
                now() > c.expires_at, coalesce(u.disabled, false)
            FROM oob_codes c LEFT JOIN users u ON u.tenant_id = c.tenant_id AND u.local_id = c.local_id
            WHERE c.code_hash = \(hash) AND c.tenant_id = \(scope: scope)
            """, logger: logger)
        for try await (localId, type, email, newEmail, used, stale, expired, disabled) in rows.decode(
            (String?, String, String, String?, Bool, Bool, Bool, Bool).self)
        {
            if used { break }
            if expired { throw FirebaseError.invalid(.expiredOobCode) }
            if disabled, type == OobRequestType.emailSignIn.rawValue { throw FirebaseError.invalid(.userDisabled) }
            if stale { break }
            guard let type = OobRequestType(rawValue: type) else { break }
            return OobAccounts.StoredCode(hash: hash, localId: localId, type: type, email: email, newEmail: newEmail)
        }
        throw FirebaseError.invalid(.invalidOobCode)
    }

    /// Marks a code used, if its user's credentials are still those it was sent for (a RECOVER_EMAIL
    /// code: if its user exists); only one of several concurrent uses wins. Every other code of its kind
    /// that its user (or, for a sign-in link to an address no account had, its address) still holds
    /// is used up with it: one reset, one verification, one sign-in per mail sent. Of RECOVER_EMAIL
    /// codes only those sent with it or later: restoring an address undoes the changes after it, while
    /// the owner of an address the account had before may still restore theirs.
    static func consumeCode(_ connection: PostgresConnection, hash: String, logger: Logger) async throws {
        let rows = try await connection.query(
            """
            UPDATE oob_codes c SET used_at = now()
            WHERE code_hash = \(hash) AND used_at IS NULL AND expires_at >= now()
                AND (local_id IS NULL OR EXISTS (
                    SELECT 1 FROM users u WHERE u.tenant_id = c.tenant_id AND u.local_id = c.local_id
                        AND (c.request_type = 'RECOVER_EMAIL' OR u.credential_seq = c.credential_seq)))
            RETURNING tenant_id, local_id, request_type, email
            """, logger: logger)
        for try await (scope, localId, type, email) in rows.decode((Scope, String?, String, String).self) {
            try await connection.query(
                """
                UPDATE oob_codes SET used_at = now()
                WHERE tenant_id = \(scope: scope) AND request_type = \(type) AND used_at IS NULL
                    AND (local_id = \(localId) OR (\(localId)::text IS NULL AND local_id IS NULL AND email = \(email)))
                    AND (request_type <> 'RECOVER_EMAIL'
                        OR created_at >= (
                            SELECT created_at FROM oob_codes WHERE tenant_id = \(scope: scope) AND code_hash = \(hash)))
                """, logger: logger)
            return
        }
        throw FirebaseError.invalid(.invalidOobCode)
    }

    static func userID(_ connection: PostgresConnection, scope: Scope, email: String, logger: Logger) async throws
        -> String?
    {
        let rows = try await connection.query(
            "SELECT local_id FROM users WHERE tenant_id = \(scope: scope) AND email = \(email)", logger: logger)
        for try await id in rows.decode(String.self) { return id }
        return nil
    }

    /// `%APP_NAME%`: the tenant's display name, or the project id for the default scope.
    static func appName(_ connection: PostgresConnection, scope: Scope, logger: Logger) async throws -> String {
        let rows = try await connection.query(
            "SELECT display_name FROM tenants WHERE tenant_id = \(scope: scope)", logger: logger)
        for try await name in rows.decode(String.self) where !name.isEmpty { return name }
        return "Tessera"
    }
}
