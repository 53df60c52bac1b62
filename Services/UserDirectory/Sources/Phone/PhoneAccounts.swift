import Crypto
import Foundation
import Logging
import PostgresNIO
import Prometheus
import TesseraShared

/// Phone sign-in (docs/protocol/phone.md): a code texted to a number (or a test number's fixed code),
/// then the code signs the number's user in, creating it, or gives the number to a signed-in user.
struct PhoneAccounts: Sendable {
    let client: Database
    /// Counts SMS refused by the scope's daily budget (`tessera_sms_budget_refusals_total`): the alert
    /// of docs/protocol/phone.md#abuse-controls watches it.
    var budgetRefusals: Counter? = nil

    /// How long a code may be used.
    static let codeLifetime: Int64 = 600
    /// Wrong codes one session may take; the next one ends it.
    static let attemptsPerCode = 5
}

extension PhoneAccounts {
    /// What a scope's phone sign-in reads: its switches and limits, and its phone settings.
    struct ScopePhone {
        var flags: ScopeFlags
        var phone: PhoneConfig
    }

    static func scopePhone(_ connection: PostgresConnection, scope: Scope, logger: Logger) async throws -> ScopePhone {
        let flags = try await ScopeFlags.read(connection, scope: scope, lock: false, logger: logger)
        return ScopePhone(flags: flags, phone: try await phoneConfig(connection, scope: scope, logger: logger))
    }

    /// The scope's phone settings alone, read in the caller's transaction.
    static func phoneConfig(_ connection: PostgresConnection, scope: Scope, logger: Logger) async throws
        -> PhoneConfig
    {
        let rows = try await connection.query(
            "SELECT phone_config FROM tenants WHERE tenant_id = \(scope: scope)", logger: logger)
        var phone = PhoneConfig.defaults
        for try await text in rows.decode(String?.self) { phone = PhoneConfig.decode(text) }
        return phone
    }

    /// The number a client typed, as a test number of the scope (its E.164 form and fixed code) or as a
    /// real one (E.164 and region, by libphonenumber): `INVALID_PHONE_NUMBER` otherwise.
    static func number(_ typed: String, phone: PhoneConfig) throws -> (e164: String, region: String?, testCode: String?)
    {
        let compact = String(typed.filter { !" -().\u{00A0}".contains($0) })
        if let code = phone.testPhoneNumbers[compact] { return (compact, nil, code) }
        do {
            let number = try PhoneNumber.normalize(typed)
            return (number.e164, number.region, nil)
        } catch {
            throw FirebaseError.invalid(.invalidPhoneNumber, "Invalid format.")
        }
    }

    /// SHA-256 of the session info (how a code is found) and of the session info with the code (how
    /// it is checked: the stored hash alone gives nothing away, docs/protocol/phone.md#codes).
    static func sessionHash(_ sessionInfo: String) -> String { Secrets.tokenHash(sessionInfo) }
    static func codeHash(sessionInfo: String, code: String) -> String { Secrets.tokenHash(sessionInfo + ":" + code) }

    /// Six random digits.
    static func newCode() -> String {
        let value = Secrets.randomBytes(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } % 1_000_000
        let text = String(value)
        return String(repeating: "0", count: 6 - text.count) + text
    }

    /// `accounts:sendVerificationCode`: checks the scope, the number, its region and the limits, keeps the
    /// code's hash and queues the SMS, in one transaction. A test number gets its fixed code and no SMS,
    /// and counts against no limit.
    func sendCode(_ request: SendPhoneCodeRequest, logger: Logger) async throws -> SendPhoneCodeResponse {
        let scope = request.scope
        return try await client.transaction(logger: logger) { connection in
            let settings = try await Self.scopePhone(connection, scope: scope, logger: logger)
            if !settings.phone.enabled { throw FirebaseError.invalid(.operationNotAllowed) }
            let number = try Self.number(request.phoneNumber, phone: settings.phone)
            let sessionInfo = try await issueCode(
                connection, scope: scope, number: number, settings: settings, clientIP: request.clientIP,
                appRefusal: request.appRefusal, code: Code(purpose: "sign_in"), logger: logger)
            return SendPhoneCodeResponse(sessionInfo: sessionInfo)
        }
    }

    /// What a code is for, and whose.
    struct Code: Sendable {
        var purpose: String
        var localId: String? = nil
        var pendingHash: String? = nil
        var enrollmentId: String? = nil
    }

    /// Checks the number's region and the limits, keeps the code's hash and queues its SMS, in the
    /// caller's transaction; the session info. A test number gets its fixed code and no SMS, and counts
    /// against no limit.
    func issueCode(
        _ connection: PostgresConnection, scope: Scope, number: (e164: String, region: String?, testCode: String?),
        settings: ScopePhone, clientIP: String?, appRefusal: ErrorCode?, code what: Code, logger: Logger
    ) async throws -> String {
        // An app that did not pass reCAPTCHA gets no code, except for a test number
        // (docs/protocol/phone.md#app-verification): a developer's app in test mode sends no real token.
        if number.testCode == nil, let appRefusal {
            throw FirebaseError.invalid(
                appRefusal,
                appRefusal == .missingRecaptchaToken
                    ? "A reCAPTCHA token is required to send a code."
                    : "The reCAPTCHA token was not accepted.")
        }
        if let region = number.region, let regions = settings.phone.smsRegionConfig, !regions.allows(region) {
            throw FirebaseError.invalid(
                .operationNotAllowed, "SMS unable to be sent until this region enabled by the app developer.")
        }
        let limits = settings.flags.rateLimits
        if number.testCode == nil {
            try await RateLimiter.hit(
                connection, scope: scope, bucket: "sms_number", key: number.e164, limit: limits.smsPerNumberPerHour,
                logger: logger)
            try await RateLimiter.hit(
                connection, scope: scope, bucket: "sms_ip", key: clientIP, limit: limits.smsPerIpPerHour,
                logger: logger)
            try await RateLimiter.hit(
                connection, scope: scope, bucket: "sms_region", key: number.region, limit: limits.smsPerRegionPerHour,
                logger: logger)
            let refusals = budgetRefusals
            try await RateLimiter.hit(
                connection, scope: scope, bucket: "sms_day", key: "scope", limit: limits.smsPerScopePerDay,
                window: 86_400,
                refusal: { _ in
                    refusals?.increment()
                    return FirebaseError.invalid(.quotaExceeded, "Exceeded quota for verifying phone numbers.")
                }, logger: logger)
        }
        let sessionInfo = Secrets.randomAlphanumeric(64)
        let code = number.testCode ?? Self.newCode()
        let expiresAt = Date().addingTimeInterval(Double(Self.codeLifetime))
        try await connection.query(
            """
            INSERT INTO phone_codes (tenant_id, session_hash, phone_number, code_hash, purpose, local_id, pending_hash,
                enrollment_id, expires_at)
            VALUES (\(scope: scope), \(Self.sessionHash(sessionInfo)), \(number.e164),
                \(Self.codeHash(sessionInfo: sessionInfo, code: code)), \(what.purpose), \(what.localId),
                \(what.pendingHash), \(what.enrollmentId), \(expiresAt))
            """, logger: logger)
        if number.testCode == nil {
            try await SMSOutbox.enqueue(
                connection, scope: scope, to: number.e164,
                body: "\(code) is your verification code. Do not share it.", expiresAt: expiresAt, logger: logger)
        }
        logger.info(
            "phone code sent",
            metadata: [
                "tenant.id": .string(scope.key), "phone.region": .string(number.region ?? "test"),
                "phone.test": .stringConvertible(number.testCode != nil), "phone.purpose": .string(what.purpose),
            ])
        return sessionInfo
    }

    /// A code checked against its session, in the caller's transaction: the code's row when it matches
    /// (and it is gone then), or the refusal. A wrong code is counted; the fifth ends the session.
    enum Checked: Sendable {
        case valid(number: String, code: Code)
        case refused(FirebaseError)
    }

    static func consumeCode(
        _ connection: PostgresConnection, scope: Scope, sessionInfo: String, code: String, purpose: String,
        logger: Logger
    ) async throws -> Checked {
        let hash = sessionHash(sessionInfo)
        let rows = try await connection.query(
            """
            SELECT phone_number, code_hash, failed_attempts, expires_at < now(), purpose, local_id, pending_hash,
                enrollment_id
            FROM phone_codes WHERE tenant_id = \(scope: scope) AND session_hash = \(hash)
            FOR UPDATE
            """, logger: logger)
        var found: (String, String, Int, Bool, String, String?, String?, String?)?
        for try await row in rows.decode((String, String, Int, Bool, String, String?, String?, String?).self) {
            found = row
        }
        guard let found, found.4 == purpose else { return .refused(.invalid(.invalidSessionInfo)) }
        func endCode() async throws {
            try await connection.query(
                "DELETE FROM phone_codes WHERE tenant_id = \(scope: scope) AND session_hash = \(hash)", logger: logger)
        }
        if found.3 {
            try await endCode()
            return .refused(.invalid(.sessionExpired))
        }
        guard Secrets.constantTimeEquals(codeHash(sessionInfo: sessionInfo, code: code), found.1) else {
            if found.2 + 1 >= attemptsPerCode {
                try await endCode()
            } else {
                try await connection.query(
                    """
                    UPDATE phone_codes SET failed_attempts = failed_attempts + 1
                    WHERE tenant_id = \(scope: scope) AND session_hash = \(hash)
                    """, logger: logger)
            }
            return .refused(.invalid(.invalidCode))
        }
        try await endCode()
        return .valid(
            number: found.0, code: Code(purpose: found.4, localId: found.5, pendingHash: found.6, enrollmentId: found.7)
        )
    }

    /// What a phone sign-in came to: a user and a session, or a refusal thrown after the transaction
    /// commits (a wrong code stays counted).
    private enum Outcome: Sendable {
        case signedIn(SignedInResponse)
        case refused(FirebaseError)
    }

    /// `accounts:signInWithPhoneNumber` (docs/protocol/phone.md#signing-in).
    func signIn(_ request: SignInWithPhoneRequest, logger: Logger) async throws -> SignedInResponse {
        let scope = request.scope
        let outcome: Outcome
        do {
            outcome = try await signInOnce(request, scope: scope, logger: logger)
        } catch let error as PSQLError where error.has(.uniqueViolation) {
            // Another sign-in created the number's user meanwhile.
            throw FirebaseError.invalid(.phoneNumberExists)
        }
        switch outcome {
        case .signedIn(let answer): return answer
        case .refused(let error): throw error
        }
    }

    private func signInOnce(_ request: SignInWithPhoneRequest, scope: Scope, logger: Logger) async throws -> Outcome {
        try await client.transaction(logger: logger) { connection in
            let settings = try await Self.scopePhone(connection, scope: scope, logger: logger)
            if !settings.phone.enabled { throw FirebaseError.invalid(.operationNotAllowed) }
            switch try await Self.consumeCode(
                connection, scope: scope, sessionInfo: request.sessionInfo, code: request.code, purpose: "sign_in",
                logger: logger)
            {
            case .refused(let error): return .refused(error)
            case .valid(let number, _):
                return try await Self.signIn(
                    connection, scope: scope, number: number, request: request, flags: settings.flags, logger: logger)
            }
        }
    }

    /// The number is proven: its user signs in (created when none has it), or a signed-in user takes it.
    private static func signIn(
        _ connection: PostgresConnection, scope: Scope, number: String, request: SignInWithPhoneRequest,
        flags: ScopeFlags, logger: Logger
    ) async throws -> Outcome {
        let owners = try await connection.query(
            "SELECT local_id FROM users WHERE tenant_id = \(scope: scope) AND phone_number = \(number) FOR UPDATE",
            logger: logger)
        var owner: String?
        for try await id in owners.decode(String.self) { owner = id }
        let now = AccountRows.nowMillis()
        if let linkTo = request.linkTo {
            if let owner, owner != linkTo { return .refused(.invalid(.phoneNumberExists)) }
            guard try await AccountRows.lockUser(connection, scope: scope, localId: linkTo, logger: logger) else {
                return .refused(.invalid(.userNotFound))
            }
            try await connection.query(
                """
                UPDATE users SET phone_number = \(number), is_anonymous = false, anonymous_due_at = NULL
                WHERE tenant_id = \(scope: scope) AND local_id = \(linkTo)
                """, logger: logger)
            let (user, session) = try await AccountRows.startSession(
                connection, scope: scope, localId: linkTo, provider: "phone", nowMillis: now, session: request.session,
                logger: logger)
            return .signedIn(SignedInResponse(user: user, session: session, isNewUser: false))
        }
        let localId: String
        var isNewUser = false
        if let owner {
            guard
                let user = try await AccountRows.fetchUsers(connection, scope: scope, localIds: [owner], logger: logger)
                    .first
            else { return .refused(.invalid(.userNotFound)) }
            if user.disabled { return .refused(.invalid(.userDisabled)) }
            // A number cannot stand in for the factors it would bypass (the emulator's signInWithPhoneNumber).
            if try await MultiFactorAccounts.factorCount(connection, scope: scope, localId: owner, logger: logger) > 0 {
                return .refused(
                    .invalid(
                        .unsupportedFirstFactor,
                        "A phone number cannot be set as a first factor on an SMS based MFA user."))
            }
            if flags.mfaMandatory { return .refused(.invalid(.mfaEnrollmentNotFound, MFAConfig.noFactorMessage)) }
            localId = owner
            try await connection.query(
                "UPDATE users SET last_login_at = \(now) WHERE tenant_id = \(scope: scope) AND local_id = \(localId)",
                logger: logger)
        } else {
            try await flags.admitNewAccount(connection, scope: scope, clientIP: request.clientIP, logger: logger)
            localId = Secrets.randomAlphanumeric(28)
            isNewUser = true
            try await connection.query(
                """
                INSERT INTO users (tenant_id, local_id, phone_number, valid_since, created_at, last_login_at,
                    last_refresh_at)
                VALUES (\(scope: scope), \(localId), \(number), \(now / 1000), \(now), \(now), \(now))
                """, logger: logger)
        }
        let (user, session) = try await AccountRows.startSession(
            connection, scope: scope, localId: localId, provider: "phone", nowMillis: now, session: request.session,
            logger: logger)
        return .signedIn(SignedInResponse(user: user, session: session, isNewUser: isNewUser))
    }
}
