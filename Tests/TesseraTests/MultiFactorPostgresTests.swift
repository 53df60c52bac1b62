import Foundation
import PostgresNIO
import Testing

@testable import TesseraShared
@testable import UserDirectory

/// Second factors on a real PostgreSQL (`MultiFactorAccounts`, issue 39): enrolment within one scope,
/// the pending sign-in and its second step, a code accepted once even by concurrent sign-ins, expired
/// pending sign-ins refused and pruned, factors deleted with their user.
@Suite("second factors in PostgreSQL", .enabled(if: PostgresSupport.available))
struct MultiFactorPostgresTests {
    let logger = PostgresSupport.logger
    let acme = Scope(wire: "acme")
    let other = Scope(wire: "other")
    let sealer = SecretSealer(keys: [Array(repeating: 7, count: 32)])!

    /// A tenant with TOTP on, and a user of it with a verified email.
    func user(_ localId: String, in tenant: String, _ client: Database) async throws {
        let config =
            #"{"enabledProviders":[],"providerConfigs":[{"state":"ENABLED","totpProviderConfig":{"adjacentIntervals":1}}],"state":"DISABLED"}"#
        try await client.query(
            """
            INSERT INTO tenants (tenant_id, display_name, mfa_config) VALUES (\(tenant), \(tenant), \(config))
            ON CONFLICT DO NOTHING
            """, logger: logger)
        try await client.query(
            """
            INSERT INTO users (tenant_id, local_id, email, email_verified, valid_since, created_at)
            VALUES (\(tenant), \(localId), \(localId + "@example.com"), true, 0, 0)
            """, logger: logger)
    }

    func session() -> NewSession {
        NewSession(refreshTokenHash: Secrets.tokenHash(Secrets.randomAlphanumeric(43)), expiresAt: 4_000_000_000)
    }

    /// Enrols a TOTP factor for `localId`; its seed and enrolment id.
    func enrol(_ accounts: MultiFactorAccounts, _ scope: Scope, _ localId: String) async throws -> (Totp, String) {
        let started = try await accounts.startTOTP(
            StartTOTPEnrollmentRequest(scope: scope, localId: localId), logger: logger)
        let seed = try #require(Base32.decode(started.totpSessionInfo.sharedSecretKey))
        let totp = Totp(secret: seed)
        let (_, created) = try await accounts.finalizeTOTP(
            FinalizeTOTPEnrollmentRequest(
                scope: scope, localId: localId, signInProvider: "password",
                sessionInfo: started.totpSessionInfo.sessionInfo,
                verificationCode: totp.code(step: Totp.step(at: Date())), displayName: "app", session: session()),
            logger: logger)
        return (totp, try #require(created.secondFactorId))
    }

    /// A first-factor sign-in of `localId`: the pending credential's hash.
    func challenge(_ client: Database, _ scope: Scope, _ localId: String) async throws -> String {
        let hash = Secrets.tokenHash(Secrets.randomAlphanumeric(43))
        let challenge = try await client.withConnection { connection in
            try await MultiFactorAccounts.challenge(
                connection, scope: scope, localId: localId, provider: "password", credentialHash: hash, logger: logger)
        }
        #expect(challenge?.mfaInfo.count == 1)
        return hash
    }

    @Test("a factor is enrolled and listed within its scope, and its seed is sealed for its row")
    func enrolWithinTheScope() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = MultiFactorAccounts(client: client, sealer: sealer)
            try await user("u1", in: "acme", client)
            try await user("u1", in: "other", client)
            let (totp, id) = try await enrol(accounts, acme, "u1")
            let users = try await client.withConnection { connection in
                try await MultiFactorAccounts.usersWithFactors(
                    connection, scope: acme, localIds: ["u1"], logger: logger)
            }
            #expect(users.first?.mfaInfo?.map(\.mfaEnrollmentId) == [id])
            #expect(try await accounts.factors(scope: other, localId: "u1", logger: logger) == nil)
            let stored = try await client.query(
                "SELECT totp_secret FROM mfa_enrollments WHERE enrollment_id = \(id)", logger: logger)
            for try await sealed in stored.decode(String.self) {
                let context = MultiFactorAccounts.seedContext(scope: acme, localId: "u1", enrollmentId: id)
                #expect(sealer.open(sealed, context: context) == totp.secret)
                #expect(sealer.open(sealed, context: "totp-seed/other/u1/\(id)") == nil)
            }
            // The other scope's user of the same id has no pending sign-in to make.
            let none = try await client.withConnection { connection in
                try await MultiFactorAccounts.challenge(
                    connection, scope: other, localId: "u1", provider: "password", credentialHash: "h",
                    logger: logger)
            }
            #expect(none == nil)
        }
    }

    @Test("of concurrent second steps with the same code, exactly one signs in")
    func concurrentSecondSteps() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = MultiFactorAccounts(client: client, sealer: sealer)
            try await user("u1", in: "acme", client)
            let (totp, id) = try await enrol(accounts, acme, "u1")
            var pending: [String] = []
            for _ in 0..<6 { pending.append(try await challenge(client, acme, "u1")) }
            let code = totp.code(step: Totp.step(at: Date()) + 1)
            let signedIn = await withTaskGroup(of: Bool.self) { group in
                for hash in pending {
                    group.addTask {
                        (try? await accounts.finalizeSignIn(
                            FinalizeMFASignInRequest(
                                scope: acme, credentialHash: hash, mfaEnrollmentId: id, verificationCode: code,
                                session: session()),
                            logger: logger)) != nil
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(signedIn == 1)
        }
    }

    @Test("an expired pending sign-in is refused, and housekeeping removes the rest of them")
    func expiredPendingSignIns() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = MultiFactorAccounts(client: client, sealer: sealer)
            try await user("u1", in: "acme", client)
            let (totp, id) = try await enrol(accounts, acme, "u1")
            let old = try await challenge(client, acme, "u1")
            let stale = try await challenge(client, acme, "u1")
            let fresh = try await challenge(client, acme, "u1")
            try await client.query(
                """
                UPDATE mfa_pending_sign_ins SET expires_at = now() - interval '1 second'
                WHERE credential_hash IN (\(old), \(stale))
                """, logger: logger)
            await expectFirebaseError("INVALID_MFA_PENDING_CREDENTIAL") {
                _ = try await accounts.finalizeSignIn(
                    FinalizeMFASignInRequest(
                        scope: acme, credentialHash: old, mfaEnrollmentId: id,
                        verificationCode: totp.code(step: Totp.step(at: Date()) + 1), session: session()),
                    logger: logger)
            }
            try await CleanupStore(client: client, anonymousRetention: .seconds(60)).housekeepOnce(logger: logger)
            let rows = try await client.query("SELECT credential_hash FROM mfa_pending_sign_ins", logger: logger)
            var left: [String] = []
            for try await hash in rows.decode(String.self) { left.append(hash) }
            #expect(left == [fresh])
        }
    }

    @Test("factors and pending sign-ins go with their user; the table refuses a factor without its secret or number")
    func deletedWithTheUser() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = MultiFactorAccounts(client: client, sealer: sealer)
            try await user("u1", in: "acme", client)
            _ = try await enrol(accounts, acme, "u1")
            _ = try await challenge(client, acme, "u1")
            try await client.query(
                """
                INSERT INTO mfa_enrollments (tenant_id, local_id, enrollment_id, factor, phone_number)
                VALUES ('acme', 'u1', 'p1', 'phone', '+15555550100')
                """, logger: logger)
            #expect(try await accounts.factors(scope: acme, localId: "u1", logger: logger)?.count == 2)
            await #expect(throws: PSQLError.self) {
                try await client.query(
                    """
                    INSERT INTO mfa_enrollments (tenant_id, local_id, enrollment_id, factor)
                    VALUES ('acme', 'u1', 't2', 'totp')
                    """, logger: logger)
            }
            try await client.query("DELETE FROM users WHERE tenant_id = 'acme' AND local_id = 'u1'", logger: logger)
            #expect(try await accounts.factors(scope: acme, localId: "u1", logger: logger) == nil)
            let pending = try await client.query("SELECT count(*)::bigint FROM mfa_pending_sign_ins", logger: logger)
            for try await count in pending.decode(Int64.self) { #expect(count == 0) }
        }
    }
}
