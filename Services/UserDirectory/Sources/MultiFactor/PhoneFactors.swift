import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// Phone numbers as second factors (docs/protocol/mfa.md#phone-factors): enrolling a number with a
/// texted code, and a pending sign-in finished with one. The codes, limits and SMS are phone sign-in's
/// (`PhoneAccounts.issueCode`, `consumeCode`).
extension PhoneAccounts {
    /// What a phone factor's step came to: a session, or a refusal thrown after the transaction
    /// commits (a wrong code stays counted).
    private enum Step: Sendable {
        case signedIn(UserRecord, SessionInfo)
        case refused(FirebaseError)
    }

    private static func requirePhoneFactors(_ config: MFAConfig) throws {
        if !config.enablesPhone {
            throw FirebaseError.invalid(.operationNotAllowed, "SMS based MFA not enabled.")
        }
    }

    /// A number the user has as a factor already, and the factor limit.
    private static func checkNewFactor(
        _ connection: PostgresConnection, scope: Scope, localId: String, number: String, logger: Logger
    ) async throws {
        let existing =
            try await MultiFactorAccounts.enrollments(connection, scope: scope, localIds: [localId], logger: logger)[
                localId] ?? []
        if existing.contains(where: { $0.factor == .phone(number) }) {
            throw FirebaseError.invalid(
                .secondFactorExists, "Phone number already enrolled as second factor for this account.")
        }
        if existing.count >= MultiFactorAccounts.factorsPerUser {
            throw FirebaseError.invalid(.secondFactorLimitExceeded)
        }
    }

    /// `mfaEnrollment:start` with `phoneEnrollmentInfo`.
    func startEnrollment(_ request: StartPhoneEnrollmentRequest, logger: Logger) async throws -> SendPhoneCodeResponse {
        let scope = request.scope
        return try await client.transaction(logger: logger) { connection in
            try Self.requirePhoneFactors(try await MultiFactorAccounts.config(connection, scope: scope, logger: logger))
            _ = try await MultiFactorAccounts.enrollingUser(
                connection, scope: scope, localId: request.localId, logger: logger)
            let settings = try await Self.scopePhone(connection, scope: scope, logger: logger)
            let number = try Self.number(request.phoneNumber, phone: settings.phone)
            try await Self.checkNewFactor(
                connection, scope: scope, localId: request.localId, number: number.e164, logger: logger)
            let sessionInfo = try await issueCode(
                connection, scope: scope, number: number, settings: settings, clientIP: request.clientIP,
                appRefusal: request.appRefusal,
                code: Code(purpose: "mfa_enrollment", localId: request.localId), logger: logger)
            return SendPhoneCodeResponse(sessionInfo: sessionInfo)
        }
    }

    /// `mfaEnrollment:finalize` with `phoneVerificationInfo`: the number is enrolled, and the caller gets
    /// a session signed in with it.
    func finalizeEnrollment(_ request: FinalizePhoneEnrollmentRequest, logger: Logger) async throws -> (
        UserRecord, SessionInfo
    ) {
        let scope = request.scope
        let step: Step = try await client.transaction(logger: logger) { connection in
            try Self.requirePhoneFactors(try await MultiFactorAccounts.config(connection, scope: scope, logger: logger))
            guard try await AccountRows.lockUser(connection, scope: scope, localId: request.localId, logger: logger)
            else { return .refused(.invalid(.userNotFound)) }
            _ = try await MultiFactorAccounts.enrollingUser(
                connection, scope: scope, localId: request.localId, logger: logger)
            switch try await Self.consumeCode(
                connection, scope: scope, sessionInfo: request.sessionInfo, code: request.code,
                purpose: "mfa_enrollment", logger: logger)
            {
            case .refused(let error): return .refused(error)
            case .valid(let number, let code):
                guard code.localId == request.localId else { return .refused(.invalid(.invalidSessionInfo)) }
                try await Self.checkNewFactor(
                    connection, scope: scope, localId: request.localId, number: number, logger: logger)
                let enrollmentId = MultiFactorEnrollment.newID()
                try await connection.query(
                    """
                    INSERT INTO mfa_enrollments (tenant_id, local_id, enrollment_id, factor, display_name, phone_number)
                    VALUES (\(scope: scope), \(request.localId), \(enrollmentId), 'phone', \(request.displayName),
                        \(number))
                    """, logger: logger)
                let (user, session) = try await MultiFactorAccounts.startSession(
                    connection, scope: scope, localId: request.localId, provider: request.signInProvider,
                    session: request.session, secondFactor: ("phone", enrollmentId), logger: logger)
                return .signedIn(user, session)
            }
        }
        switch step {
        case .signedIn(let user, let session): return (user, session)
        case .refused(let error): throw error
        }
    }

    /// The pending sign-in of `credentialHash`, locked, or the refusal of one that is not (any more).
    private static func pending(
        _ connection: PostgresConnection, scope: Scope, credentialHash: String, logger: Logger
    ) async throws -> (localId: String, provider: String)? {
        let rows = try await connection.query(
            """
            SELECT local_id, sign_in_provider FROM mfa_pending_sign_ins
            WHERE tenant_id = \(scope: scope) AND credential_hash = \(credentialHash) AND expires_at > now()
            FOR UPDATE
            """, logger: logger)
        for try await row in rows.decode((String, String).self) { return row }
        return nil
    }

    /// `mfaSignIn:start` with a phone factor: its number gets a code for this pending sign-in.
    func startSignIn(_ request: StartPhoneMFASignInRequest, logger: Logger) async throws -> SendPhoneCodeResponse {
        let scope = request.scope
        return try await client.transaction(logger: logger) { connection in
            let config = try await MultiFactorAccounts.config(connection, scope: scope, logger: logger)
            try Self.requirePhoneFactors(config)
            guard
                let pending = try await Self.pending(
                    connection, scope: scope, credentialHash: request.credentialHash, logger: logger)
            else { throw FirebaseError.invalid(.invalidMfaPendingCredential) }
            let factors =
                try await MultiFactorAccounts.enrollments(
                    connection, scope: scope, localIds: [pending.localId], logger: logger)[pending.localId] ?? []
            guard let factor = factors.first(where: { $0.enrollmentId == request.mfaEnrollmentId }),
                case .phone(let e164) = factor.factor
            else { throw FirebaseError.invalid(.mfaEnrollmentNotFound) }
            let settings = try await Self.scopePhone(connection, scope: scope, logger: logger)
            let number = try Self.number(e164, phone: settings.phone)
            let sessionInfo = try await issueCode(
                connection, scope: scope, number: number, settings: settings, clientIP: request.clientIP,
                appRefusal: request.appRefusal,
                code: Code(
                    purpose: "mfa_sign_in", localId: pending.localId, pendingHash: request.credentialHash,
                    enrollmentId: factor.enrollmentId), logger: logger)
            return SendPhoneCodeResponse(sessionInfo: sessionInfo)
        }
    }

    /// `mfaSignIn:finalize` with `phoneVerificationInfo`: the code of this pending sign-in's factor
    /// finishes it.
    func finalizeSignIn(_ request: FinalizePhoneMFASignInRequest, logger: Logger) async throws -> (
        UserRecord, SessionInfo
    ) {
        let scope = request.scope
        let step: Step = try await client.transaction(logger: logger) { connection in
            try Self.requirePhoneFactors(try await MultiFactorAccounts.config(connection, scope: scope, logger: logger))
            guard
                let pending = try await Self.pending(
                    connection, scope: scope, credentialHash: request.credentialHash, logger: logger)
            else { return .refused(.invalid(.invalidMfaPendingCredential)) }
            switch try await Self.consumeCode(
                connection, scope: scope, sessionInfo: request.sessionInfo, code: request.code,
                purpose: "mfa_sign_in", logger: logger)
            {
            case .refused(let error): return .refused(error)
            case .valid(_, let code):
                guard code.pendingHash == request.credentialHash, code.localId == pending.localId,
                    let enrollmentId = code.enrollmentId
                else { return .refused(.invalid(.invalidSessionInfo)) }
                // The factor must still exist (a withdrawal also ends the user's pending sign-ins).
                let factors =
                    try await MultiFactorAccounts.enrollments(
                        connection, scope: scope, localIds: [pending.localId], logger: logger)[pending.localId] ?? []
                guard factors.contains(where: { $0.enrollmentId == enrollmentId }) else {
                    return .refused(.invalid(.mfaEnrollmentNotFound))
                }
                try await connection.query(
                    """
                    DELETE FROM mfa_pending_sign_ins
                    WHERE tenant_id = \(scope: scope) AND credential_hash = \(request.credentialHash)
                    """, logger: logger)
                switch try await MultiFactorAccounts.finishSecondStep(
                    connection, scope: scope, localId: pending.localId, provider: pending.provider,
                    session: request.session, secondFactor: ("phone", enrollmentId), logger: logger)
                {
                case .success(let (user, session)): return .signedIn(user, session)
                case .failure(let error): return .refused(error)
                }
            }
        }
        switch step {
        case .signedIn(let user, let session): return (user, session)
        case .refused(let error): throw error
        }
    }
}
