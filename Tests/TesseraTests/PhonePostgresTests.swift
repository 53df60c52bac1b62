import Foundation
import PostgresNIO
import Testing

@testable import TesseraShared
@testable import UserDirectory

/// Phone sign-in's storage on a real PostgreSQL (`PhoneAccounts`, docs/protocol/phone.md): the code kept
/// only as a hash, its SMS queued in the same transaction (none for a test number), a code used once by
/// concurrent sign-ins, and expired codes pruned.
@Suite("phone sign-in in PostgreSQL", .enabled(if: PostgresSupport.available))
struct PhonePostgresTests {
    let logger = PostgresSupport.logger
    let scope = Scope(wire: "acme")

    func tenant(_ client: Database, testNumbers: [String: String] = [:]) async throws {
        var config = PhoneConfig.defaults
        config.enabled = true
        config.testPhoneNumbers = testNumbers
        try await client.query(
            """
            INSERT INTO tenants (tenant_id, display_name, phone_config) VALUES ('acme', 'acme', \(config.encoded))
            """, logger: logger)
    }

    func session() -> NewSession {
        NewSession(refreshTokenHash: Secrets.tokenHash(Secrets.randomAlphanumeric(43)), expiresAt: 4_000_000_000)
    }

    func count(_ client: Database, _ sql: PostgresQuery) async throws -> Int64 {
        for try await value in try await client.query(sql, logger: logger).decode(Int64.self) { return value }
        return 0
    }

    @Test("a code is queued by SMS in its transaction and kept only as a hash; a test number gets no SMS")
    func sendCode() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            try await tenant(client, testNumbers: ["+16505550199": "123456"])
            let phone = PhoneAccounts(client: client)
            _ = try await phone.sendCode(
                SendPhoneCodeRequest(scope: scope, phoneNumber: "+1 650 555 0101"), logger: logger)
            let rows = try await client.query(
                "SELECT body FROM sms_outbox WHERE to_number = '+16505550101'", logger: logger)
            var bodies: [String] = []
            for try await body in rows.decode(String.self) { bodies.append(body) }
            #expect(bodies.count == 1)
            let code = String(try #require(bodies.first).prefix(6))
            #expect(code.count == 6 && code.allSatisfy(\.isNumber))
            let hashes = try await client.query("SELECT code_hash FROM phone_codes", logger: logger)
            for try await hash in hashes.decode(String.self) { #expect(!hash.contains(code)) }
            _ = try await phone.sendCode(
                SendPhoneCodeRequest(scope: scope, phoneNumber: "+16505550199"), logger: logger)
            #expect(try await count(client, "SELECT count(*)::bigint FROM sms_outbox") == 1)
        }
    }

    @Test("of concurrent sign-ins with one code, exactly one succeeds, and makes one user")
    func concurrentSignIns() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            try await tenant(client, testNumbers: ["+16505550199": "123456"])
            let phone = PhoneAccounts(client: client)
            let sent = try await phone.sendCode(
                SendPhoneCodeRequest(scope: scope, phoneNumber: "+16505550199"), logger: logger)
            let succeeded = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        (try? await phone.signIn(
                            SignInWithPhoneRequest(
                                scope: scope, sessionInfo: sent.sessionInfo, code: "123456", linkTo: nil,
                                session: session()), logger: logger)) != nil
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(succeeded == 1)
            let users = try await count(
                client, "SELECT count(*)::bigint FROM users WHERE phone_number = '+16505550199'")
            #expect(users == 1)
        }
    }

    @Test("housekeeping prunes expired codes and keeps the others")
    func pruning() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            try await tenant(client, testNumbers: ["+16505550199": "123456"])
            let phone = PhoneAccounts(client: client)
            for _ in 0..<2 {
                _ = try await phone.sendCode(
                    SendPhoneCodeRequest(scope: scope, phoneNumber: "+16505550199"), logger: logger)
            }
            try await client.query(
                """
                UPDATE phone_codes SET expires_at = now() - interval '1 second'
                WHERE session_hash = (SELECT min(session_hash) FROM phone_codes)
                """, logger: logger)
            try await CleanupStore(client: client, anonymousRetention: .seconds(60)).housekeepOnce(logger: logger)
            #expect(try await count(client, "SELECT count(*)::bigint FROM phone_codes") == 1)
            #expect(try await count(client, "SELECT count(*)::bigint FROM phone_codes WHERE expires_at < now()") == 0)
        }
    }
}
