import Foundation
import Logging
import PostgresNIO
import TesseraShared

/// A second factor as an admin writes it (docs/protocol/mfa.md#admins): an entry of `accounts:update`'s
/// `mfa.enrollments`, or of `mfaInfo` on `POST …/accounts` and in an import, as the Admin SDKs send
/// them. An entry naming a factor the user has keeps it; any other entry adds a phone factor. A TOTP
/// factor cannot be added this way: its seed is never given to an admin.
public struct AdminFactor: Sendable, Equatable {
    public var enrollmentId: String?
    /// The number as given; `MultiFactorAccounts.setFactors` reads it.
    public var phoneNumber: String?
    public var displayName: String?
    /// Milliseconds since the epoch (what the wire's times carry: an exported time comes back as it went).
    public var enrolledAtMillis: Int64?

    public init(
        enrollmentId: String? = nil, phoneNumber: String? = nil, displayName: String? = nil,
        enrolledAtMillis: Int64? = nil
    ) {
        self.enrollmentId = enrollmentId
        self.phoneNumber = phoneNumber
        self.displayName = displayName
        self.enrolledAtMillis = enrolledAtMillis
    }

    /// The entries of a request (`{mfaEnrollmentId, phoneInfo, displayName, enrolledAt}`); one that is
    /// not an object, or whose fields have the wrong type, is an invalid payload at `field`.
    public static func parse(_ entries: [JSONValue], field: String) throws -> [AdminFactor] {
        try entries.map { entry in
            let invalid = FirebaseError.invalidJSON("Invalid value at '\(field)'.")
            guard case .object(let fields) = entry else { throw invalid }
            func text(_ key: String) throws -> String? {
                switch fields[key] {
                case nil, .null?: return nil
                case .string(let value)?: return value
                default: throw invalid
                }
            }
            var factor = AdminFactor()
            factor.enrollmentId = try text("mfaEnrollmentId").flatMap { $0.isEmpty ? nil : $0 }
            if let id = factor.enrollmentId, id.utf8.count > 128 { throw invalid }
            factor.phoneNumber = try text("phoneInfo")
            factor.displayName = try text("displayName")
            try Credentials.checkProfile(displayName: factor.displayName, photoUrl: nil)
            if let enrolledAt = try text("enrolledAt") {
                guard let date = RFC3339.parse(enrolledAt), date.timeIntervalSince1970.magnitude < 1e12 else {
                    throw invalid
                }
                factor.enrolledAtMillis = Int64((date.timeIntervalSince1970 * 1000).rounded())
            }
            return factor
        }
    }
}

extension MultiFactorAccounts {
    /// A number an admin gives a phone factor: libphonenumber's E.164 form, or one of the scope's test
    /// numbers (docs/protocol/phone.md#test-numbers); `INVALID_MFA_PHONE_NUMBER` otherwise.
    static func factorNumber(_ given: String, phone: PhoneConfig) throws -> String {
        guard given.utf8.count <= 64, let number = try? PhoneAccounts.number(given, phone: phone) else {
            throw FirebaseError.invalid(.invalidMfaPhoneNumber, "Invalid format.")
        }
        return number.e164
    }

    /// An admin's list of factors (docs/protocol/mfa.md#admins) becomes the user's: entries naming a
    /// factor the user has keep it (a phone factor takes the entry's number and a factor its name, when
    /// given); other entries add phone factors, with the entry's id or a new one; factors no entry
    /// names are removed, with the sessions signed in with them. A number given twice counts once, as
    /// production has it. In the caller's transaction, the user's row locked.
    static func setFactors(
        _ connection: PostgresConnection, scope: Scope, localId: String, factors: [AdminFactor], logger: Logger
    ) async throws {
        let existing =
            try await enrollments(connection, scope: scope, localIds: [localId], logger: logger)[localId] ?? []
        let current = Dictionary(existing.map { ($0.enrollmentId, $0) }, uniquingKeysWith: { first, _ in first })
        let phone =
            factors.contains { $0.phoneNumber != nil }
            ? try await PhoneAccounts.phoneConfig(connection, scope: scope, logger: logger) : PhoneConfig.defaults
        var ids: Set<String> = []
        var numbers: Set<String> = []
        var kept: [(factor: MultiFactorEnrollment, number: String?, displayName: String?)] = []
        // The factors kept first, so that a new entry repeating a kept factor's number is dropped.
        for entry in factors {
            guard let id = entry.enrollmentId, let factor = current[id] else { continue }
            guard !ids.contains(id) else { throw FirebaseError.invalid(.duplicateMfaEnrollmentId) }
            var number: String?
            switch factor.factor {
            case .phone(let old):
                let given = try entry.phoneNumber.map { try factorNumber($0, phone: phone) } ?? old
                guard numbers.insert(given).inserted else { continue }
                number = given
            case .totp:
                if entry.phoneNumber != nil {
                    throw FirebaseError.invalid(
                        .invalidArgument, "The second factor \(id) is a TOTP factor and takes no phoneInfo.")
                }
            }
            ids.insert(id)
            kept.append((factor, number, entry.displayName))
        }
        var added: [(id: String, number: String, displayName: String?, enrolledAt: Int64?)] = []
        for entry in factors where entry.enrollmentId.map({ current[$0] == nil }) ?? true {
            guard let given = entry.phoneNumber else {
                throw FirebaseError.invalid(.invalidMfaPhoneNumber, "Invalid format.")
            }
            let number = try factorNumber(given, phone: phone)
            guard numbers.insert(number).inserted else { continue }
            let id = entry.enrollmentId ?? MultiFactorEnrollment.newID()
            guard ids.insert(id).inserted else { throw FirebaseError.invalid(.duplicateMfaEnrollmentId) }
            added.append((id, number, entry.displayName, entry.enrolledAtMillis))
        }
        if kept.count + added.count > factorsPerUser { throw FirebaseError.invalid(.secondFactorLimitExceeded) }
        if !added.isEmpty {
            // An id another user's factor has is refused, not taken over.
            let taken = try await connection.query(
                """
                SELECT 1 FROM mfa_enrollments
                WHERE tenant_id = \(scope: scope) AND enrollment_id = ANY(\(added.map(\.id))) LIMIT 1
                """, logger: logger)
            for try await _ in taken { throw FirebaseError.invalid(.duplicateMfaEnrollmentId) }
        }

        let removed = existing.map(\.enrollmentId).filter { !ids.contains($0) }
        if !removed.isEmpty {
            try await connection.query(
                """
                DELETE FROM mfa_enrollments
                WHERE tenant_id = \(scope: scope) AND local_id = \(localId) AND enrollment_id = ANY(\(removed))
                """, logger: logger)
            try await endSignIns(connection, scope: scope, localId: localId, factors: removed, logger: logger)
        }
        for (factor, number, displayName) in kept {
            let name = displayName ?? factor.displayName
            if case .phone(let old) = factor.factor, number == old, name == factor.displayName { continue }
            if case .totp = factor.factor, name == factor.displayName { continue }
            try await connection.query(
                """
                UPDATE mfa_enrollments SET display_name = \(name), phone_number = coalesce(\(number), phone_number)
                WHERE tenant_id = \(scope: scope) AND enrollment_id = \(factor.enrollmentId)
                """, logger: logger)
        }
        // Without a time of its own, a factor is enrolled now; clock_timestamp() keeps the entries'
        // order, as the factors are listed oldest first.
        for factor in added {
            try await connection.query(
                """
                INSERT INTO mfa_enrollments (tenant_id, local_id, enrollment_id, factor, display_name, phone_number,
                    enrolled_at)
                VALUES (\(scope: scope), \(localId), \(factor.id), 'phone', \(factor.displayName), \(factor.number),
                    coalesce(to_timestamp(\(factor.enrolledAt)::bigint / 1000.0), clock_timestamp()))
                """, logger: logger)
        }
    }
}
