import Foundation
import PostgresNIO
import Testing

@testable import TesseraShared
@testable import UserDirectory

/// The second factors' storage (`MultiFactorStore`, issue 39) on a real PostgreSQL: within one scope,
/// a TOTP code accepted once even by concurrent callers, deleted with its user.
@Suite("second factors in PostgreSQL", .enabled(if: PostgresSupport.available))
struct MultiFactorPostgresTests {
    let logger = PostgresSupport.logger
    let acme = Scope(wire: "acme")
    let other = Scope(wire: "other")

    func user(_ localId: String, in tenant: String, _ client: Database) async throws {
        try await client.query(
            "INSERT INTO tenants (tenant_id, display_name) VALUES (\(tenant), \(tenant)) ON CONFLICT DO NOTHING",
            logger: logger)
        try await client.query(
            "INSERT INTO users (tenant_id, local_id, valid_since, created_at) VALUES (\(tenant), \(localId), 0, 0)",
            logger: logger)
    }

    @Test("a TOTP factor is enrolled, listed, accepted once per step and withdrawn, within its scope")
    func enrolAcceptWithdraw() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let store = MultiFactorStore(client: client)
            try await user("u1", in: "acme", client)
            try await user("u1", in: "other", client)
            let id = MultiFactorStore.newEnrollmentID()
            #expect(id.count == 28 && id != MultiFactorStore.newEnrollmentID())
            #expect(
                try await store.addTOTP(
                    scope: acme, localId: "u1", enrollmentId: id, displayName: "phone app", sealedSecret: "v1.k.s",
                    acceptedStep: 100, logger: logger))
            // No such user in the scope: nothing enrolled.
            #expect(
                try await !store.addTOTP(
                    scope: acme, localId: "nobody", enrollmentId: MultiFactorStore.newEnrollmentID(), displayName: nil,
                    sealedSecret: "v1.k.s", acceptedStep: 1, logger: logger))

            let listed = try await store.enrollments(scope: acme, localId: "u1", logger: logger)
            #expect(listed.count == 1)
            #expect(listed.first?.enrollmentId == id && listed.first?.displayName == "phone app")
            #expect(listed.first?.factor == .totp(sealedSecret: "v1.k.s", lastStep: 100))
            #expect(try await store.enrollments(scope: other, localId: "u1", logger: logger).isEmpty)

            // The enrolment's own step, and any before it, are used; a later one is accepted once.
            #expect(try await !store.acceptTOTP(scope: acme, enrollmentId: id, step: 100, logger: logger))
            #expect(try await !store.acceptTOTP(scope: acme, enrollmentId: id, step: 99, logger: logger))
            #expect(try await !store.acceptTOTP(scope: other, enrollmentId: id, step: 101, logger: logger))
            #expect(try await store.acceptTOTP(scope: acme, enrollmentId: id, step: 101, logger: logger))
            #expect(try await !store.acceptTOTP(scope: acme, enrollmentId: id, step: 101, logger: logger))

            // Another scope's user cannot withdraw it, nor can another user of the scope.
            #expect(try await !store.withdraw(scope: other, localId: "u1", enrollmentId: id, logger: logger))
            try await user("u2", in: "acme", client)
            #expect(try await !store.withdraw(scope: acme, localId: "u2", enrollmentId: id, logger: logger))
            #expect(try await store.withdraw(scope: acme, localId: "u1", enrollmentId: id, logger: logger))
            #expect(try await store.enrollments(scope: acme, localId: "u1", logger: logger).isEmpty)
        }
    }

    @Test("of concurrent callers with the same code, exactly one is accepted")
    func concurrentAcceptance() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let store = MultiFactorStore(client: client)
            try await user("u1", in: "acme", client)
            let id = MultiFactorStore.newEnrollmentID()
            _ = try await store.addTOTP(
                scope: acme, localId: "u1", enrollmentId: id, displayName: nil, sealedSecret: "v1.k.s",
                acceptedStep: 1, logger: logger)
            let accepted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await store.acceptTOTP(scope: acme, enrollmentId: id, step: 2, logger: logger) }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(accepted == 1)
        }
    }

    @Test("factors go with their user, and the table refuses a factor without its secret or number")
    func deletedWithTheUser() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let store = MultiFactorStore(client: client)
            try await user("u1", in: "acme", client)
            _ = try await store.addTOTP(
                scope: acme, localId: "u1", enrollmentId: MultiFactorStore.newEnrollmentID(), displayName: nil,
                sealedSecret: "v1.k.s", acceptedStep: 1, logger: logger)
            try await client.query(
                """
                INSERT INTO mfa_enrollments (tenant_id, local_id, enrollment_id, factor, phone_number)
                VALUES ('acme', 'u1', 'p1', 'phone', '+15555550100')
                """, logger: logger)
            let factors = try await store.enrollments(scope: acme, localId: "u1", logger: logger)
            #expect(factors.count == 2)
            #expect(factors.contains { $0.factor == .phone("+15555550100") })
            await #expect(throws: PSQLError.self) {
                try await client.query(
                    """
                    INSERT INTO mfa_enrollments (tenant_id, local_id, enrollment_id, factor)
                    VALUES ('acme', 'u1', 't2', 'totp')
                    """, logger: logger)
            }
            try await client.query("DELETE FROM users WHERE tenant_id = 'acme' AND local_id = 'u1'", logger: logger)
            #expect(try await store.enrollments(scope: acme, localId: "u1", logger: logger).isEmpty)
        }
    }
}
