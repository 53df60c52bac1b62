import Foundation
import Logging
import PostgresNIO
import Testing

@testable import TesseraShared
@testable import UserDirectory

/// The hot reads by user id must cost one index probe per id whatever the planner believes about a
/// tenant's size. PostgreSQL 15 never uses `local_id = ANY($2)` on the second column of
/// (tenant_id, local_id) in a plain index scan; with a tenant that looked small (grown since its last
/// ANALYZE, or any generic plan) it scanned the tenant and filtered: every lookup read every user.
@Suite("query plans of the hot reads on a real PostgreSQL", .enabled(if: PostgresSupport.available))
struct QueryPlanPostgresTests {
    let logger = PostgresSupport.logger

    /// Every node of an `EXPLAIN (ANALYZE, FORMAT JSON)` plan.
    static func nodes(_ plan: [String: Any]) -> [[String: Any]] {
        [plan] + ((plan["Plans"] as? [[String: Any]]) ?? []).flatMap(nodes)
    }

    /// Rows read and thrown away by filters over one plan, and the scans of a table whose index
    /// condition does not name `local_id` (a scan of the whole tenant).
    static func explain(_ connection: PostgresConnection, _ sql: String, logger: Logger) async throws
        -> (removed: Int, tenantScans: Int, text: String)
    {
        let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        var text = ""
        for try await line in rows.decode(String.self) { text += line }
        let document = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
        let plan = try #require(document.first?["Plan"] as? [String: Any])
        var removed = 0
        var tenantScans = 0
        for node in nodes(plan) {
            removed += (node["Rows Removed by Filter"] as? Int) ?? 0
            if ["users", "provider_links"].contains(node["Relation Name"] as? String),
                !((node["Index Cond"] as? String) ?? "").contains("local_id")
            {
                tenantScans += 1
            }
        }
        return (removed, tenantScans, text)
    }

    @Test("users and their provider links are read by index probes per id, in a tenant grown since ANALYZE")
    func hotReadsProbeTheIndex() async throws {
        try await PostgresSupport.withDatabase(reuse: false) { (client: Database) async throws -> Void in
            try await client.query(
                "INSERT INTO tenants (tenant_id, display_name) VALUES ('old', 'old'), ('grown', 'grown')",
                logger: logger)
            // The statistics know one tenant only; the other grows afterwards.
            for tenant in ["old", "grown"] {
                try await client.query(
                    """
                    INSERT INTO users (tenant_id, local_id, valid_since, created_at)
                    SELECT \(tenant), 'u' || n, 0, 0 FROM generate_series(1, 2000) AS n
                    """, logger: logger)
                try await client.query(
                    """
                    INSERT INTO provider_links (tenant_id, provider_id, raw_id, local_id)
                    SELECT \(tenant), 'google.com', 'g' || n, 'u' || n FROM generate_series(1, 2000) AS n
                    """, logger: logger)
                if tenant == "old" { try await client.query("ANALYZE users, provider_links", logger: logger) }
            }
            try await client.withConnection { connection in
                let statements = [
                    ("users", "(text, text[])", UsersByID.sql, "('grown', ARRAY['u7', 'u1999', 'none'])"),
                    ("one_user", "(text, text)", UserOfEnabledScope.sql, "('grown', 'u7')"),
                ]
                for (name, types, sql, arguments) in statements {
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "PREPARE \(name) \(types) AS \(sql)"), logger: logger)
                    // A custom plan (the planner sees the values), then the generic one a prepared
                    // statement settles on.
                    for mode in ["force_custom_plan", "force_generic_plan"] {
                        try await connection.query(
                            PostgresQuery(unsafeSQL: "SET plan_cache_mode = \(mode)"), logger: logger)
                        let (removed, tenantScans, text) = try await Self.explain(
                            connection,
                            "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE \(name) \(arguments)",
                            logger: logger)
                        #expect(removed == 0, "\(name), \(mode): rows read and filtered away\n\(text)")
                        #expect(tenantScans == 0, "\(name), \(mode): a scan not keyed by local_id\n\(text)")
                    }
                }
            }
            // And the store answers with exactly those users and their links, in provider order:
            // one user with two links, one with none.
            try await client.query(
                "INSERT INTO users (tenant_id, local_id, valid_since, created_at) VALUES ('grown', 'solo', 0, 0)",
                logger: logger)
            try await client.query(
                "INSERT INTO provider_links (tenant_id, provider_id, raw_id, local_id) VALUES ('grown', 'apple.com', 'a7', 'u7')",
                logger: logger)
            let users = try await client.withConnection { connection in
                try await AccountRows.fetchUsers(
                    connection, scope: Scope(wire: "grown"), localIds: ["u1999", "u7", "none", "u7", "solo"],
                    logger: logger)
            }
            #expect(users.map(\.localId) == ["u1999", "u7", "solo"])
            #expect(users.map { $0.providerUserInfo.map(\.rawId) } == [["g1999"], ["a7", "g7"], []])
        }
    }

    /// The foreign-key check of every new refresh token (`refresh_tokens` → `refresh_families`) is planned
    /// once per connection, often while the tables are new and not analyzed. It must use the primary
    /// key then too: with two more columns on `refresh_families` it used an index on `tenant_id` alone,
    /// and each sign-up read all of its tenant's sessions until autoanalyze (docs/design-notes.md,
    /// "Second factors").
    @Test("the refresh-token foreign-key check uses the primary key on a new, unanalyzed schema")
    func foreignKeyCheckOnANewSchema() async throws {
        try await PostgresSupport.withDatabase(reuse: false) { (client: Database) async throws -> Void in
            try await client.withConnection { connection in
                try await connection.query("SET plan_cache_mode = force_generic_plan", logger: logger)
                try await connection.query(
                    """
                    PREPARE fk_check(text, uuid) AS SELECT 1 FROM ONLY refresh_families x
                    WHERE tenant_id = $1 AND family_id = $2 FOR KEY SHARE OF x
                    """, logger: logger)
                let rows = try await connection.query(
                    "EXPLAIN EXECUTE fk_check('t', '00000000-0000-0000-0000-000000000000')", logger: logger)
                var plan = ""
                for try await line in rows.decode(String.self) { plan += line + "\n" }
                #expect(plan.contains("refresh_families_pkey"), "\(plan)")
            }
        }
    }
}
