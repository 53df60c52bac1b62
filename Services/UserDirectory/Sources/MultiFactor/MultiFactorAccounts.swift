import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// Second factors (docs/protocol/mfa.md): enrolling and withdrawing TOTP factors, the challenge a
/// first-factor sign-in of an enrolled user gets instead of a session, and the second step that
/// turns it into one.
struct MultiFactorAccounts: Sendable {
    let client: Database
    /// Seals TOTP seeds and enrolment sessions; nil when the operator configured no key
    /// (`TESSERA_MFA_KEYS_FILE`), and then TOTP cannot be enrolled.
    let sealer: SecretSealer?

    /// How long an enrolment started with `mfaEnrollment:start` may be finalized.
    static let enrollmentWindow: Int64 = 600
    /// How long a pending sign-in waits for its second factor.
    static let pendingLifetime: Int64 = 600
    /// Wrong codes one pending sign-in may take; the next one ends it.
    static let attemptsPerPendingSignIn = 5
    /// Wrong second-factor codes one user may get in an hour, over all its pending sign-ins.
    static let failuresPerUserPerHour = 10
    /// Factors one user may have.
    static let factorsPerUser = 5
}

extension MultiFactorAccounts {
    /// What an enrolment session carries, sealed into `sessionInfo`.
    private struct EnrollmentSession: Codable {
        /// The seed, base64url.
        var seed: String
        var enrollmentId: String
        /// Seconds since the epoch.
        var expiresAt: Int64
    }

    /// A sealed value is bound to where it belongs (`SecretSealer`'s context).
    static func sessionContext(scope: Scope, localId: String) -> String {
        "totp-enrollment/\(scope.key)/\(localId)"
    }

    static func seedContext(scope: Scope, localId: String, enrollmentId: String) -> String {
        "totp-seed/\(scope.key)/\(localId)/\(enrollmentId)"
    }

    /// The sealer, or the refusal of a server that has no key.
    private func requireSealer() throws -> SecretSealer {
        guard let sealer else {
            throw FirebaseError.invalid(
                .operationNotAllowed, "TOTP based MFA needs a sealing key on the server (TESSERA_MFA_KEYS_FILE).")
        }
        return sealer
    }

    /// The scope's second-factor settings (checks the scope exists and is enabled).
    static func config(_ connection: PostgresConnection, scope: Scope, logger: Logger) async throws -> MFAConfig {
        let rows = try await connection.query(
            "SELECT disable_auth, mfa_config FROM tenants WHERE tenant_id = \(scope: scope)", logger: logger)
        for try await (disabled, text) in rows.decode((Bool, String?).self) {
            if disabled { throw FirebaseError.invalid(.projectDisabled) }
            return MFAConfig.decode(text)
        }
        throw FirebaseError.invalid(.tenantNotFound)
    }

    /// Checks that `localId` may enrol a factor: an enabled user with a verified email.
    static func enrollingUser(
        _ connection: PostgresConnection, scope: Scope, localId: String, logger: Logger
    ) async throws -> UserRecord {
        guard
            let user = try await AccountRows.fetchUsers(connection, scope: scope, localIds: [localId], logger: logger)
                .first
        else { throw FirebaseError.invalid(.userNotFound) }
        if user.disabled { throw FirebaseError.invalid(.userDisabled) }
        if user.email == nil || !user.emailVerified {
            throw FirebaseError.invalid(.unverifiedEmail, "Need to verify email first before enrolling second factors.")
        }
        return user
    }

    /// `mfaEnrollment:start` with `totpEnrollmentInfo`: a new seed, given to the app once and kept
    /// nowhere but in the sealed `sessionInfo`.
    func startTOTP(_ request: StartTOTPEnrollmentRequest, logger: Logger) async throws -> StartTOTPEnrollmentResponse {
        let sealer = try requireSealer()
        let scope = request.scope
        try await client.withConnection { connection in
            let config = try await Self.config(connection, scope: scope, logger: logger)
            if !config.enablesTOTP { throw FirebaseError.invalid(.operationNotAllowed, "TOTP based MFA not enabled.") }
            _ = try await Self.enrollingUser(connection, scope: scope, localId: request.localId, logger: logger)
            let count = try await Self.factorCount(connection, scope: scope, localId: request.localId, logger: logger)
            if count >= Self.factorsPerUser { throw FirebaseError.invalid(.secondFactorLimitExceeded) }
        }
        let totp = Totp.generate()
        let expiresAt = Int64(Date().timeIntervalSince1970) + Self.enrollmentWindow
        let payload = EnrollmentSession(
            seed: Base64URL.encode(totp.secret), enrollmentId: MultiFactorEnrollment.newID(), expiresAt: expiresAt)
        let sessionInfo = try sealer.seal(
            Array(try JSONEncoder().encode(payload)),
            context: Self.sessionContext(scope: scope, localId: request.localId))
        return StartTOTPEnrollmentResponse(
            totpSessionInfo: TOTPSessionInfo(
                sharedSecretKey: totp.sharedSecretKey, verificationCodeLength: Totp.digits,
                hashingAlgorithm: Totp.algorithm, periodSec: Int(Totp.period), sessionInfo: sessionInfo,
                // With milliseconds, as `enrolledAt` (the Apple SDK's date format needs them).
                finalizeEnrollmentTime: RFC3339.millis(fromEpochMillis: expiresAt * 1000)))
    }

    static func factorCount(_ connection: PostgresConnection, scope: Scope, localId: String, logger: Logger)
        async throws -> Int
    {
        let rows = try await connection.query(
            "SELECT count(*)::bigint FROM mfa_enrollments WHERE tenant_id = \(scope: scope) AND local_id = \(localId)",
            logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// `mfaEnrollment:finalize` with `totpVerificationInfo`: the seed of `sessionInfo` is enrolled
    /// once its first code matches, and the caller gets a session signed in with it.
    func finalizeTOTP(_ request: FinalizeTOTPEnrollmentRequest, logger: Logger) async throws -> (
        UserRecord, SessionInfo
    ) {
        let sealer = try requireSealer()
        let scope = request.scope
        guard
            let opened = sealer.open(
                request.sessionInfo, context: Self.sessionContext(scope: scope, localId: request.localId)),
            let session = try? JSONDecoder().decode(EnrollmentSession.self, from: Data(opened)),
            let seed = Base64URL.decode(session.seed)
        else { throw FirebaseError.invalid(.invalidSessionInfo) }
        if Int64(Date().timeIntervalSince1970) > session.expiresAt { throw FirebaseError.invalid(.sessionExpired) }
        let totp = Totp(secret: Array(seed))
        return try await client.transaction(logger: logger) { connection in
            let config = try await Self.config(connection, scope: scope, logger: logger)
            if !config.enablesTOTP { throw FirebaseError.invalid(.operationNotAllowed, "TOTP based MFA not enabled.") }
            guard try await AccountRows.lockUser(connection, scope: scope, localId: request.localId, logger: logger)
            else { throw FirebaseError.invalid(.userNotFound) }
            _ = try await Self.enrollingUser(connection, scope: scope, localId: request.localId, logger: logger)
            let count = try await Self.factorCount(connection, scope: scope, localId: request.localId, logger: logger)
            if count >= Self.factorsPerUser { throw FirebaseError.invalid(.secondFactorLimitExceeded) }
            guard
                let step = totp.matchingStep(
                    of: request.verificationCode, at: Date(), adjacentIntervals: config.totpAdjacentIntervals)
            else { throw FirebaseError.invalid(.invalidCode, "Invalid verification code.") }
            let sealedSeed = try sealer.seal(
                totp.secret,
                context: Self.seedContext(scope: scope, localId: request.localId, enrollmentId: session.enrollmentId))
            // The enrolment id was fixed when the session started: a second finalize of the same
            // session finds it taken.
            let inserted = try await connection.query(
                """
                INSERT INTO mfa_enrollments (tenant_id, local_id, enrollment_id, factor, display_name, totp_secret,
                    totp_last_step)
                VALUES (\(scope: scope), \(request.localId), \(session.enrollmentId), 'totp', \(request.displayName),
                    \(sealedSeed), \(step))
                ON CONFLICT (tenant_id, enrollment_id) DO NOTHING
                RETURNING enrollment_id
                """, logger: logger)
            var added = false
            for try await _ in inserted.decode(String.self) { added = true }
            if !added { throw FirebaseError.invalid(.invalidSessionInfo) }
            return try await Self.startSession(
                connection, scope: scope, localId: request.localId, provider: request.signInProvider,
                session: request.session, secondFactor: ("totp", session.enrollmentId), logger: logger)
        }
    }

    /// `mfaEnrollment:withdraw`: the factor goes, the sessions signed in with it end, and the caller
    /// gets a new session (still with its own second factor, unless that was the one withdrawn).
    func withdraw(_ request: WithdrawMFARequest, logger: Logger) async throws -> (UserRecord, SessionInfo) {
        let scope = request.scope
        return try await client.transaction(logger: logger) { connection in
            _ = try await Self.config(connection, scope: scope, logger: logger)
            guard try await AccountRows.lockUser(connection, scope: scope, localId: request.localId, logger: logger)
            else { throw FirebaseError.invalid(.userNotFound) }
            let removed = try await connection.query(
                """
                DELETE FROM mfa_enrollments
                WHERE tenant_id = \(scope: scope) AND local_id = \(request.localId)
                    AND enrollment_id = \(request.mfaEnrollmentId)
                RETURNING factor
                """, logger: logger)
            var factor: String?
            for try await kind in removed.decode(String.self) { factor = kind }
            guard factor != nil else { throw FirebaseError.invalid(.mfaEnrollmentNotFound) }
            try await Self.endSignIns(
                connection, scope: scope, localId: request.localId, factors: [request.mfaEnrollmentId], logger: logger)
            var kept: (String, String)?
            if let id = request.secondFactorId, id != request.mfaEnrollmentId {
                let rows = try await connection.query(
                    """
                    SELECT factor FROM mfa_enrollments
                    WHERE tenant_id = \(scope: scope) AND local_id = \(request.localId) AND enrollment_id = \(id)
                    """, logger: logger)
                for try await kind in rows.decode(String.self) { kept = (kind, id) }
            }
            return try await Self.startSession(
                connection, scope: scope, localId: request.localId, provider: request.signInProvider,
                session: request.session, secondFactor: kept, logger: logger)
        }
    }
}

extension MultiFactorAccounts {
    /// A new session of `localId` signed in with `provider` (and `secondFactor`) now, and the user with
    /// its factors, in the caller's transaction.
    static func startSession(
        _ connection: PostgresConnection, scope: Scope, localId: String, provider: String, session: NewSession,
        secondFactor: (kind: String, enrollmentId: String)?, logger: Logger
    ) async throws -> (UserRecord, SessionInfo) {
        let created = try await AccountRows.createSession(
            connection, scope: scope, localId: localId, provider: provider, authTime: AccountRows.nowMillis() / 1000,
            refreshTokenHash: session.refreshTokenHash, expiresAt: session.expiresAt, secondFactor: secondFactor,
            logger: logger)
        guard let user = try await usersWithFactors(connection, scope: scope, localIds: [localId], logger: logger).first
        else { throw FirebaseError.internal }
        return (user, created)
    }

    /// The end of a second step that passed (a TOTP or a texted code): the sign-in recorded on the user,
    /// and a session signed in with the factor. A user gone or disabled since the first step is the
    /// refusal, returned so that the caller's transaction still commits what came before it (the spent
    /// pending sign-in, the code).
    static func finishSecondStep(
        _ connection: PostgresConnection, scope: Scope, localId: String, provider: String, session: NewSession,
        secondFactor: (kind: String, enrollmentId: String), logger: Logger
    ) async throws -> Result<(UserRecord, SessionInfo), FirebaseError> {
        let updated = try await connection.query(
            """
            UPDATE users SET last_login_at = \(AccountRows.nowMillis())
            WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
            RETURNING disabled
            """, logger: logger)
        var disabled: Bool?
        for try await value in updated.decode(Bool.self) { disabled = value }
        guard let disabled else { return .failure(.invalid(.userNotFound)) }
        if disabled { return .failure(.invalid(.userDisabled)) }
        return .success(
            try await startSession(
                connection, scope: scope, localId: localId, provider: provider, session: session,
                secondFactor: secondFactor, logger: logger))
    }

    /// After factors of a user were removed: the sessions signed in with them end, and so do the
    /// user's pending sign-ins (their challenge may have named a removed factor). In the caller's
    /// transaction.
    static func endSignIns(
        _ connection: PostgresConnection, scope: Scope, localId: String, factors: [String], logger: Logger
    ) async throws {
        guard !factors.isEmpty else { return }
        try await connection.query(
            """
            UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'factor_withdrawn'
            WHERE tenant_id = \(scope: scope) AND local_id = \(localId) AND revoked_at IS NULL
                AND family_id IN (
                    SELECT family_id FROM session_second_factors
                    WHERE tenant_id = \(scope: scope) AND second_factor_id = ANY(\(factors)))
            """, logger: logger)
        try await connection.query(
            "DELETE FROM mfa_pending_sign_ins WHERE tenant_id = \(scope: scope) AND local_id = \(localId)",
            logger: logger)
    }

    /// One user's `mfaInfo` (nil without factors).
    func factors(scope: Scope, localId: String, logger: Logger) async throws -> [MFAEnrollmentInfo]? {
        let own = try await client.withConnection { connection in
            try await Self.enrollments(connection, scope: scope, localIds: [localId], logger: logger)[localId] ?? []
        }
        return own.isEmpty ? nil : own.map(\.info)
    }

    /// Users by id with their `mfaInfo` (docs/protocol/mfa.md#the-factors).
    static func usersWithFactors(
        _ connection: PostgresConnection, scope: Scope, localIds: [String], logger: Logger
    ) async throws -> [UserRecord] {
        var users = try await AccountRows.fetchUsers(connection, scope: scope, localIds: localIds, logger: logger)
        let factors = try await enrollments(connection, scope: scope, localIds: localIds, logger: logger)
        for index in users.indices {
            let own = factors[users[index].localId] ?? []
            users[index].mfaInfo = own.isEmpty ? nil : own.map(\.info)
        }
        return users
    }

    /// The factors of the users, oldest first, by user.
    static func enrollments(
        _ connection: PostgresConnection, scope: Scope, localIds: [String], logger: Logger
    ) async throws -> [String: [MultiFactorEnrollment]] {
        guard !localIds.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT enrollment_id, local_id, display_name, factor, phone_number, totp_secret, totp_last_step, enrolled_at
            FROM mfa_enrollments WHERE tenant_id = \(scope: scope) AND local_id = ANY(\(localIds))
            ORDER BY enrolled_at, position
            """, logger: logger)
        var result: [String: [MultiFactorEnrollment]] = [:]
        for try await row in rows.decode((String, String, String?, String, String?, String?, Int64?, Date).self) {
            guard let enrollment = MultiFactorEnrollment(row) else { continue }
            result[enrollment.localId, default: []].append(enrollment)
        }
        return result
    }
}

extension MultiFactorEnrollment {
    /// A row of `enrollment_id, local_id, display_name, factor, phone_number, totp_secret,
    /// totp_last_step, enrolled_at`; nil for a row the table's checks rule out.
    init?(_ row: (String, String, String?, String, String?, String?, Int64?, Date)) {
        let factor: Factor
        switch (row.3, row.4, row.5) {
        case ("phone", let phone?, _): factor = .phone(phone)
        case ("totp", _, let secret?): factor = .totp(sealedSecret: secret, lastStep: row.6)
        default: return nil
        }
        self.init(enrollmentId: row.0, localId: row.1, displayName: row.2, factor: factor, enrolledAt: row.7)
    }

    /// As `mfaInfo[]` lists it; a phone number masked but for its last four digits when `masked`.
    func info(masked: Bool) -> MFAEnrollmentInfo {
        var phone: String?
        var totp: EmptyObject?
        switch factor {
        case .phone(let number): phone = masked ? Self.mask(number) : number
        case .totp: totp = EmptyObject()
        }
        return MFAEnrollmentInfo(
            mfaEnrollmentId: enrollmentId, displayName: displayName, phoneInfo: phone, totpInfo: totp,
            // Milliseconds, as Identity Platform writes it: the Apple SDK parses
            // `yyyy-MM-dd'T'HH:mm:ss.SSSZ` and reads no date from a time without them.
            enrolledAt: RFC3339.millis(fromEpochMillis: Self.millis(enrolledAt))
        )
    }

    var info: MFAEnrollmentInfo { info(masked: false) }

    /// A stored time's milliseconds, cut as PostgreSQL's `to_char(…, 'MS')` cuts them (the other reader of
    /// `enrolled_at`): the microseconds the column holds first, by rounding (a `Date` is a Double, and an
    /// imported `….160Z` reads as 0.159999…), then whole milliseconds, rounded down.
    static func millis(_ date: Date) -> Int64 {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        return micros >= 0 ? micros / 1000 : (micros - 999) / 1000
    }

    /// `+15555550100` → `+*******0100`.
    static func mask(_ number: String) -> String {
        var digitsSeen = 0
        return String(
            number.reversed().map { character -> Character in
                guard character.isASCII, character.isNumber else { return character }
                digitsSeen += 1
                return digitsSeen > 4 ? "*" : character
            }.reversed())
    }

    var kind: String {
        switch factor {
        case .totp: "totp"
        case .phone: "phone"
        }
    }
}
