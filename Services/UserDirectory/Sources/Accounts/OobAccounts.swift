import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// Out-of-band codes (B.2.1 sendOobCode, resetPassword, update{oobCode}; A.7): single use,
/// expiring, stored as SHA-256; the mail that carries a code is queued in the same transaction.
/// Out-of-band codes (B.5.8–B.5.10, A.7): sending them (and their mail), password resets and
/// applying verification and email-change codes.
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
                    // Under protection an unknown address is not revealed: same answer, no mail (B.5.9).
                    // Only a client's reset may hide an unknown address; admins are told (B.2.3).
                    if request.returnLink || request.requestType != .passwordReset {
                        throw FirebaseError.invalid(.userNotFound)
                    }
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
            }
            let code = Base64URL.encode(Secrets.randomBytes(32))
            try await connection.query(
                """
                INSERT INTO oob_codes (code_hash, tenant_id, local_id, request_type, email, new_email, expires_at,
                    credential_seq)
                VALUES (\(Secrets.tokenHash(code)), \(scope), \(localId), \(request.requestType.rawValue),
                    \(signIn ? recipient : user?.email ?? recipient), \(request.newEmail),
                    now() + make_interval(secs => \(ttlSeconds)),
                    coalesce((SELECT credential_seq FROM users WHERE tenant_id = \(scope) AND local_id = \(localId)), 0))
                """, logger: logger)
            var link = request.linkPrefix + "&oobCode=" + code
            if let continueUrl = request.continueUrl,
                let encoded = continueUrl.addingPercentEncoding(withAllowedCharacters: .urlQueryValueAllowed)
            {
                link += "&continueUrl=" + encoded
            }
            if request.returnLink {
                return SendOobCodeResponse(email: recipient, oobCode: code, oobLink: link)
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
                VALUES (\(scope), \(recipient), \(mail.subject), \(mail.body))
                """, logger: logger)
            logger.info(
                "out-of-band code queued",
                metadata: [
                    "tenant.id": .string(scope.key), "user.id": .string(localId ?? "-"),
                    "oob.type": .string(request.requestType.rawValue),
                ])
            return SendOobCodeResponse(email: recipient)
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
                WHERE u.tenant_id = \(scope) AND u.local_id = \(localId) AND u.email = \(code.email)
                    AND before.tenant_id = u.tenant_id AND before.local_id = u.local_id
                RETURNING before.email_verified
                """, logger: logger)
            var wasVerified: Bool?
            for try await verified in updated.decode(Bool.self) { wasVerified = verified }
            // The account is gone or its email changed since the code was sent.
            guard let wasVerified else { throw FirebaseError.invalid(.invalidOobCode) }
            if !wasVerified {
                // The mailbox's owner proves the address for the first time: providers linked while
                // nobody had (by whoever created the account, perhaps, to keep a way in) are
                // unlinked, as a trusted provider's takeover does (A.4).
                try await connection.query(
                    "DELETE FROM provider_links WHERE tenant_id = \(scope) AND local_id = \(localId)",
                    logger: logger)
            }
            try await AccountRows.revokeSessions(
                connection, scope: scope, localId: localId, reason: "password_reset", logger: logger)
            logger.info("password reset", metadata: ["tenant.id": .string(scope.key), "user.id": .string(localId)])
            return OobCodeResponse(requestType: code.type, email: code.email, newEmail: nil, user: nil)
        }
    }

    /// `accounts:update{oobCode}`: applies a VERIFY_EMAIL or VERIFY_AND_CHANGE_EMAIL code.
    public func applyOobCode(_ request: ApplyOobCodeRequest, logger: Logger) async throws -> OobCodeResponse {
        let scope = request.scope
        _ = try await ScopeFlags.read(client, scope: scope, logger: logger)
        let code = try await AccountRows.readCode(client, request.oobCode, scope: scope, logger: logger)
        guard code.type == .verifyEmail || code.type == .verifyAndChangeEmail, let localId = code.localId else {
            throw FirebaseError.invalid(.invalidOobCode)
        }
        do {
            return try await client.transaction(logger: logger) { connection in
                try await AccountRows.consumeCode(connection, hash: code.hash, logger: logger)
                let now = AccountRows.nowMillis()
                let changing = code.type == .verifyAndChangeEmail
                let updated = try await connection.query(
                    """
                    UPDATE users SET email_verified = true, email = \(changing ? code.newEmail : code.email),
                        valid_since = CASE WHEN \(changing) THEN \(now / 1000) ELSE valid_since END
                    WHERE tenant_id = \(scope) AND local_id = \(localId) AND email = \(code.email)
                    RETURNING local_id
                    """, logger: logger)
                var found = false
                for try await _ in updated.decode(String.self) { found = true }
                guard found else { throw FirebaseError.invalid(.invalidOobCode) }
                if changing {
                    try await AccountRows.revokeSessions(
                        connection, scope: scope, localId: localId, reason: "credential_change", logger: logger)
                }
                guard
                    let user = try await AccountRows.fetchUsers(
                        connection, scope: scope, localIds: [localId], logger: logger
                    ).first
                else { throw FirebaseError.internal }
                return OobCodeResponse(requestType: code.type, email: code.email, newEmail: code.newEmail, user: user)
            }
        } catch let error as PSQLError where error.has(.uniqueViolation) {
            throw FirebaseError.invalid(.emailExists)
        }
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
    /// the code was sent ends it.
    static func readCode(_ client: Database, _ code: String, scope: Scope, logger: Logger) async throws
        -> OobAccounts.StoredCode
    {
        let hash = Secrets.tokenHash(code)
        let rows = try await client.query(
            """
            SELECT c.local_id, c.request_type, c.email, c.new_email,
                c.used_at IS NOT NULL OR (c.local_id IS NOT NULL AND c.credential_seq IS DISTINCT FROM u.credential_seq),
                now() > c.expires_at
            FROM oob_codes c LEFT JOIN users u ON u.tenant_id = c.tenant_id AND u.local_id = c.local_id
            WHERE c.code_hash = \(hash) AND c.tenant_id = \(scope)
            """, logger: logger)
        for try await (localId, type, email, newEmail, used, expired) in rows.decode(
            (String?, String, String, String?, Bool, Bool).self)
        {
            if used { break }
            if expired { throw FirebaseError.invalid(.expiredOobCode) }
            guard let type = OobRequestType(rawValue: type) else { break }
            return OobAccounts.StoredCode(hash: hash, localId: localId, type: type, email: email, newEmail: newEmail)
        }
        throw FirebaseError.invalid(.invalidOobCode)
    }

    /// Marks a code used, if its user's credentials are still those it was sent for; only one of
    /// several concurrent uses wins. Every other code of its kind
    /// that its user (or, for a sign-in link to an address no account had, its address) still holds
    /// is used up with it: one reset, one verification, one sign-in per mail sent.
    static func consumeCode(_ connection: PostgresConnection, hash: String, logger: Logger) async throws {
        let rows = try await connection.query(
            """
            UPDATE oob_codes c SET used_at = now()
            WHERE code_hash = \(hash) AND used_at IS NULL AND expires_at >= now()
                AND (local_id IS NULL OR credential_seq = (
                    SELECT u.credential_seq FROM users u WHERE u.tenant_id = c.tenant_id AND u.local_id = c.local_id))
            RETURNING tenant_id, local_id, request_type, email
            """, logger: logger)
        for try await (scope, localId, type, email) in rows.decode((String, String?, String, String).self) {
            try await connection.query(
                """
                UPDATE oob_codes SET used_at = now()
                WHERE tenant_id = \(scope) AND request_type = \(type) AND used_at IS NULL
                    AND (local_id = \(localId) OR (\(localId)::text IS NULL AND local_id IS NULL AND email = \(email)))
                """, logger: logger)
            return
        }
        throw FirebaseError.invalid(.invalidOobCode)
    }

    static func userID(_ connection: PostgresConnection, scope: Scope, email: String, logger: Logger) async throws
        -> String?
    {
        let rows = try await connection.query(
            "SELECT local_id FROM users WHERE tenant_id = \(scope) AND email = \(email)", logger: logger)
        for try await id in rows.decode(String.self) { return id }
        return nil
    }

    /// `%APP_NAME%`: the tenant's display name, or the project id for the default scope.
    static func appName(_ connection: PostgresConnection, scope: Scope, logger: Logger) async throws -> String {
        let rows = try await connection.query(
            "SELECT display_name FROM tenants WHERE tenant_id = \(scope)", logger: logger)
        for try await name in rows.decode(String.self) where !name.isEmpty { return name }
        return "Tessera"
    }
}
