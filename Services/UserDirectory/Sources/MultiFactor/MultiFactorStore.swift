import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// A user's enrolled second factors, as Firebase's `mfaInfo[]` lists them.
struct MultiFactorEnrollment: Sendable, Equatable {
    enum Factor: Sendable, Equatable {
        /// An authenticator app's TOTP seed, sealed (`SecretSealer`), and the last time step a code
        /// of it was accepted for.
        case totp(sealedSecret: String, lastStep: Int64?)
        /// A phone number (E.164) that receives codes by SMS.
        case phone(String)
    }

    let enrollmentId: String
    let localId: String
    let displayName: String?
    let factor: Factor
    let enrolledAt: Date
}

/// Second factors in PostgreSQL (`mfa_enrollments`), always within one scope.
struct MultiFactorStore: Sendable {
    let client: Database

    /// A new enrolment id: 28 URL-safe characters, as unguessable as a user id.
    static func newEnrollmentID() -> String { Secrets.randomAlphanumeric(28) }

    /// The user's factors, oldest first.
    func enrollments(scope: Scope, localId: String, logger: Logger) async throws -> [MultiFactorEnrollment] {
        let rows = try await client.query(
            """
            SELECT enrollment_id, local_id, display_name, factor, phone_number, totp_secret, totp_last_step, enrolled_at
            FROM mfa_enrollments WHERE tenant_id = \(scope: scope) AND local_id = \(localId)
            ORDER BY enrolled_at, enrollment_id
            """, logger: logger)
        var result: [MultiFactorEnrollment] = []
        for try await row in rows.decode(
            (String, String, String?, String, String?, String?, Int64?, Date).self)
        {
            if let enrollment = MultiFactorEnrollment(row) { result.append(enrollment) }  // the CHECKs rule out nil
        }
        return result
    }

    /// Enrols a TOTP factor whose first code was accepted for `step`; false when the user does not
    /// exist in the scope.
    func addTOTP(
        scope: Scope, localId: String, enrollmentId: String, displayName: String?, sealedSecret: String,
        acceptedStep: Int64, logger: Logger
    ) async throws -> Bool {
        let rows = try await client.query(
            """
            INSERT INTO mfa_enrollments (tenant_id, local_id, enrollment_id, factor, display_name, totp_secret,
                totp_last_step)
            SELECT u.tenant_id, u.local_id, \(enrollmentId), 'totp', \(displayName), \(sealedSecret), \(acceptedStep)
            FROM users u WHERE u.tenant_id = \(scope: scope) AND u.local_id = \(localId)
            RETURNING enrollment_id
            """, logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
    }

    /// Records that a code of the TOTP factor was accepted for `step`, unless one was accepted for it
    /// or a later step already: true for exactly one of any number of concurrent callers with the
    /// same code, so a code is accepted once.
    func acceptTOTP(scope: Scope, enrollmentId: String, step: Int64, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            UPDATE mfa_enrollments SET totp_last_step = \(step)
            WHERE tenant_id = \(scope: scope) AND enrollment_id = \(enrollmentId) AND factor = 'totp'
                AND (totp_last_step IS NULL OR totp_last_step < \(step))
            RETURNING enrollment_id
            """, logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
    }

    /// Removes one of the user's factors; false when the user has no such factor in the scope.
    func withdraw(scope: Scope, localId: String, enrollmentId: String, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            DELETE FROM mfa_enrollments
            WHERE tenant_id = \(scope: scope) AND local_id = \(localId) AND enrollment_id = \(enrollmentId)
            RETURNING enrollment_id
            """, logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
    }
}
