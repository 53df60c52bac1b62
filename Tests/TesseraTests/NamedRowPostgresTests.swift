import Foundation
import PostgresNIO
import Testing

@testable import TesseraShared
@testable import UserDirectory

/// Rows read by column name (`NamedRow`): a column a row type reads but its statement does not
/// select is an error the request answers with, never PostgresNIO's trap, and a nullable `tenant_id`
/// reads as a `Scope`.
@Suite("rows read by column name on a real PostgreSQL", .enabled(if: PostgresSupport.available))
struct NamedRowPostgresTests {
    let logger = PostgresSupport.logger

    @Test("a column the statement does not select throws MissingColumn; present ones decode by name")
    func readsByName() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let rows = try await client.query(
                "SELECT 'b'::text AS second, 1::bigint AS first, ''::text AS tenant_id, NULL::text AS link_email",
                logger: logger)
            var read = 0
            for try await row in rows {
                let named = row.makeRandomAccess()
                #expect(try named.value("first", as: Int64.self) == 1)
                #expect(try named.value("second", as: String.self) == "b")
                #expect(try named.value("tenant_id", as: Scope.self) == .project)
                #expect(try named.value("link_email", as: String?.self) == nil)
                #expect(throws: MissingColumn.self) { try named.value("third", as: String.self) }
                read += 1
            }
            #expect(read == 1)
        }
    }
}
