import Foundation
import Logging
import PostgresNIO
import TesseraShared

extension AccountRows {
    /// A first-factor sign-in of `localId` (password, email link, identity provider): a session, or,
    /// for a user with factors the scope asks for, a pending sign-in and its challenge
    /// (docs/protocol/mfa.md#signing-in). In the caller's transaction.
    static func signIn(
        _ connection: PostgresConnection, scope: Scope, localId: String, provider: String, nowMillis now: Int64,
        session: NewSession, logger: Logger
    ) async throws -> (UserRecord, SessionInfo, SecondFactorChallenge?) {
        if let challenge = try await MultiFactorAccounts.challenge(
            connection, scope: scope, localId: localId, provider: provider, credentialHash: session.refreshTokenHash,
            logger: logger)
        {
            guard let user = try await fetchUsers(connection, scope: scope, localIds: [localId], logger: logger).first
            else { throw FirebaseError.internal }
            let firstFactor = SessionInfo(
                familyId: "", signInProvider: provider, authTime: now / 1000, tokenIssuedAt: now / 1000)
            return (user, firstFactor, challenge)
        }
        let (user, started) = try await startSession(
            connection, scope: scope, localId: localId, provider: provider, nowMillis: now, session: session,
            logger: logger)
        return (user, started, nil)
    }
}

extension MultiFactorAccounts {
    /// The challenge of a first-factor sign-in, when the user has factors of a kind the scope has on:
    /// a pending sign-in is stored under `credentialHash` (the hash of the `mfaPendingCredential` the
    /// client gets). Nil, and nothing written, otherwise; in a scope where second factors are
    /// mandatory, `MFA_ENROLLMENT_NOT_FOUND` then (docs/protocol/mfa.md#mandatory). One statement
    /// reads the scope's settings with the user's factors; a user without factors costs that one
    /// index probe.
    static func challenge(
        _ connection: PostgresConnection, scope: Scope, localId: String, provider: String, credentialHash: String,
        logger: Logger
    ) async throws -> SecondFactorChallenge? {
        let rows = try await connection.query(
            """
            SELECT t.mfa_config, e.enrollment_id, e.local_id, e.display_name, e.factor, e.phone_number,
                e.totp_secret, e.totp_last_step, e.enrolled_at
            FROM tenants t LEFT JOIN mfa_enrollments e ON e.tenant_id = t.tenant_id AND e.local_id = \(localId)
            WHERE t.tenant_id = \(scope: scope)
            ORDER BY e.enrolled_at, e.position
            """, logger: logger)
        var config: MFAConfig?
        var factors: [MultiFactorEnrollment] = []
        for try await row in rows.decode(
            (String?, String?, String?, String?, String?, String?, String?, Int64?, Date?).self)
        {
            if config == nil { config = MFAConfig.decode(row.0) }
            if let id = row.1, let owner = row.2, let factor = row.4, let enrolledAt = row.8,
                let enrollment = MultiFactorEnrollment((id, owner, row.3, factor, row.5, row.6, row.7, enrolledAt))
            {
                factors.append(enrollment)
            }
        }
        guard let config else { return nil }
        let asked = factors.filter { config.enables($0.factor) }
        guard !asked.isEmpty else {
            if config.isMandatory { throw FirebaseError.invalid(.mfaEnrollmentNotFound, MFAConfig.noFactorMessage) }
            return nil
        }
        try await connection.query(
            """
            INSERT INTO mfa_pending_sign_ins (tenant_id, credential_hash, local_id, sign_in_provider, expires_at)
            VALUES (\(scope: scope), \(credentialHash), \(localId), \(provider),
                now() + make_interval(secs => \(Double(pendingLifetime))))
            """, logger: logger)
        return SecondFactorChallenge(mfaInfo: asked.map { $0.info(masked: true) })
    }

    /// What a second step came to: a session, or a refusal (thrown after the transaction commits,
    /// so that a wrong code stays counted).
    private enum SecondStep: Sendable {
        case signedIn(UserRecord, SessionInfo)
        case refused(FirebaseError)
    }

    /// `mfaSignIn:finalize` with `totpVerificationInfo` (docs/protocol/mfa.md#signing-in): the pending
    /// sign-in becomes a session signed in with the factor when its code matches. A code is accepted
    /// once; wrong codes are counted on the pending sign-in (the fifth ends it) and on the user (ten
    /// an hour, then `TOO_MANY_ATTEMPTS_TRY_LATER`).
    func finalizeSignIn(_ request: FinalizeMFASignInRequest, logger: Logger) async throws -> (UserRecord, SessionInfo) {
        let scope = request.scope
        let sealer = self.sealer
        let step: SecondStep = try await client.transaction(logger: logger) { connection in
            let config = try await Self.config(connection, scope: scope, logger: logger)
            let pendingRows = try await connection.query(
                """
                SELECT local_id, sign_in_provider, failed_attempts, expires_at < now()
                FROM mfa_pending_sign_ins
                WHERE tenant_id = \(scope: scope) AND credential_hash = \(request.credentialHash)
                FOR UPDATE
                """, logger: logger)
            var pending: (localId: String, provider: String, failures: Int, expired: Bool)?
            for try await row in pendingRows.decode((String, String, Int, Bool).self) { pending = row }
            guard let pending else { return .refused(.invalid(.invalidMfaPendingCredential)) }
            func endPending() async throws {
                try await connection.query(
                    """
                    DELETE FROM mfa_pending_sign_ins
                    WHERE tenant_id = \(scope: scope) AND credential_hash = \(request.credentialHash)
                    """, logger: logger)
            }
            if pending.expired {
                try await endPending()
                return .refused(.invalid(.invalidMfaPendingCredential, "The MFA pending credential has expired."))
            }
            let failuresThisHour = try await RateLimiter.count(
                connection, scope: scope, bucket: "mfa_failure", key: pending.localId, logger: logger)
            if failuresThisHour.count >= Self.failuresPerUserPerHour {
                return .refused(.tooManyAttempts(retryAfterSeconds: Int(max(1, failuresThisHour.remaining))))
            }
            let factorRows = try await connection.query(
                """
                SELECT enrollment_id, local_id, display_name, factor, phone_number, totp_secret, totp_last_step,
                    enrolled_at
                FROM mfa_enrollments
                WHERE tenant_id = \(scope: scope) AND local_id = \(pending.localId)
                    AND enrollment_id = \(request.mfaEnrollmentId)
                FOR UPDATE
                """, logger: logger)
            var enrollment: MultiFactorEnrollment?
            for try await row in factorRows.decode(
                (String, String, String?, String, String?, String?, Int64?, Date).self)
            {
                enrollment = MultiFactorEnrollment(row)
            }
            guard let enrollment, config.enables(enrollment.factor) else {
                return .refused(.invalid(.mfaEnrollmentNotFound))
            }
            guard case .totp(let sealed, let lastStep) = enrollment.factor else {
                return .refused(.invalid(.invalidArgument, "The factor is not a TOTP factor."))
            }
            guard let sealer,
                let seed = sealer.open(
                    sealed,
                    context: Self.seedContext(
                        scope: scope, localId: pending.localId, enrollmentId: enrollment.enrollmentId))
            else {
                logger.error(
                    "a TOTP seed does not open with the configured keys (TESSERA_MFA_KEYS_FILE)",
                    metadata: ["tenant.id": .string(scope.key), "mfa.enrollment": .string(enrollment.enrollmentId)])
                return .refused(.internal)
            }
            guard
                let matched = Totp(secret: seed).matchingStep(
                    of: request.verificationCode, at: Date(), adjacentIntervals: config.totpAdjacentIntervals,
                    usedThrough: lastStep)
            else {
                _ = try await RateLimiter.increment(
                    connection, scope: scope, bucket: "mfa_failure", key: pending.localId, logger: logger)
                if pending.failures + 1 >= Self.attemptsPerPendingSignIn {
                    try await endPending()
                } else {
                    try await connection.query(
                        """
                        UPDATE mfa_pending_sign_ins SET failed_attempts = failed_attempts + 1
                        WHERE tenant_id = \(scope: scope) AND credential_hash = \(request.credentialHash)
                        """, logger: logger)
                }
                logger.notice(
                    "second factor refused",
                    metadata: ["tenant.id": .string(scope.key), "user.id": .string(pending.localId)])
                return .refused(.invalid(.invalidCode, "Invalid verification code."))
            }
            try await connection.query(
                """
                UPDATE mfa_enrollments SET totp_last_step = \(matched)
                WHERE tenant_id = \(scope: scope) AND enrollment_id = \(enrollment.enrollmentId)
                """, logger: logger)
            try await endPending()
            switch try await Self.finishSecondStep(
                connection, scope: scope, localId: pending.localId, provider: pending.provider,
                session: request.session, secondFactor: (enrollment.kind, enrollment.enrollmentId), logger: logger)
            {
            case .success(let (user, created)): return .signedIn(user, created)
            case .failure(let error): return .refused(error)
            }
        }
        switch step {
        case .signedIn(let user, let session): return (user, session)
        case .refused(let error): throw error
        }
    }
}
