import Foundation
import Logging
import PostgresNIO
import TesseraShared

struct ServiceAccountStore: Sendable {
    let client: Database
    let projectID: String

    static let columns =
        "account_id, tenant_id, display_name, client_email, client_id, private_key_id, public_key_pem, created_at"
    typealias Row = (String, String?, String, String, String, String, String, Date)

    static func account(_ r: Row) -> ServiceAccount {
        ServiceAccount(
            accountId: r.0, owner: Owner(column: r.1), displayName: r.2, clientEmail: r.3, clientId: r.4,
            privateKeyId: r.5,
            publicKeyPem: r.6, createTime: r.7)
    }

    /// Registers a public key under a new account; the caller keeps (or was just given) the private key.
    func create(owner: Owner, displayName: String, publicKeyPem: String, logger: Logger) async throws
        -> ServiceAccount
    {
        let accountId = "sa-" + Secrets.randomAlphanumeric(16).lowercased()
        let keyId = Secrets.randomBytes(20).map { String(format: "%02x", $0) }.joined()
        let clientId = "1" + (0..<20).map { _ in String(Int.random(in: 0...9)) }.joined()
        let email = "\(accountId)@\(projectID).iam.tessera.local"
        let rows = try await client.query(
            """
            INSERT INTO service_accounts (account_id, tenant_id, display_name, client_email, client_id, private_key_id,
                public_key_pem)
            VALUES (\(accountId), \(owner: owner), \(displayName), \(email), \(clientId), \(keyId), \(publicKeyPem))
            RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        for try await row in rows.decode(Row.self) { return Self.account(row) }
        throw FirebaseError.internal
    }

    /// A page of live accounts in id order, after `after` (the previous page's last id).
    func list(owner: Owner, after: String?, limit: Int, logger: Logger) async throws -> [ServiceAccount] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.columns) FROM service_accounts
            WHERE tenant_id IS NOT DISTINCT FROM \(owner: owner) AND revoked_at IS NULL AND account_id > \(after ?? "")
            ORDER BY account_id LIMIT \(limit)
            """, logger: logger)
        var result: [ServiceAccount] = []
        for try await row in rows.decode(Row.self) { result.append(Self.account(row)) }
        return result
    }

    func revoke(accountId: String, owner: Owner, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            UPDATE service_accounts SET revoked_at = now()
            WHERE account_id = \(accountId) AND tenant_id IS NOT DISTINCT FROM \(owner: owner) AND revoked_at IS NULL
            RETURNING account_id
            """, logger: logger)
        for try await _ in rows.decode(String.self) { return true }
        return false
    }

    /// The live account whose key signed a token: by `kid` (= `private_key_id`), or by `iss` (=
    /// `client_email`) for tokens signed without a key id.
    func signer(keyId: String?, issuer: String?, logger: Logger) async throws -> ServiceAccount? {
        let rows: PostgresRowSequence
        if let keyId {
            rows = try await client.query(
                """
                SELECT \(unescaped: Self.columns) FROM service_accounts
                WHERE private_key_id = \(keyId) AND revoked_at IS NULL
                """, logger: logger)
        } else if let issuer {
            rows = try await client.query(
                """
                SELECT \(unescaped: Self.columns) FROM service_accounts
                WHERE client_email = \(issuer) AND revoked_at IS NULL
                """, logger: logger)
        } else {
            return nil
        }
        for try await row in rows.decode(Row.self) { return Self.account(row) }
        return nil
    }
}
