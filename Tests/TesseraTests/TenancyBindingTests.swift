import Foundation
import Testing

/// The tenancy rule the compiler cannot check by itself (docs/architecture.md, "Where tenancy is enforced"): every
/// statement of the services binds `tenant_id` through `\(scope:)` or `\(owner:)`
/// (or, in a prepared statement, `$1` bound by `append(scope:)`), never a string of its own.
/// `Scope` is not `PostgresEncodable`, so a scope cannot be bound any other way; this reads every
/// Swift source of the services for the other half: a `tenant_id` given something else.
enum TenancyBindingAudit {
    static let allowed = ["scope:", "owner:"]

    /// What binds `tenant_id` the wrong way in one source file, a line each.
    static func violations(
        in source: String, migrations: Bool = false, bindingProtocols: [String] = []
    ) -> [String] {
        var found: [String] = []
        let comparison = #"(?:=\s*ANY\s*\(|IS\s+(?:NOT\s+)?DISTINCT\s+FROM|<>|!=|<=|>=|=|<|>)"#
        // `tenant_id <op> \(x)` and `\(x) <op> tenant_id`.
        for pattern in [
            #"\btenant_id\s*"# + comparison + #"\s*\\\((?!scope:|owner:)[^\n]*"#,
            #"\\\((?!scope:|owner:)[^()\n]*(?:\([^()\n]*\))?[^()\n]*\)\s*(?:=|<>)\s*(?:\w+\.)?tenant_id\b"#,
        ] {
            found += matches(pattern, in: source).map { "binds tenant_id without a scope: \($0)" }
        }
        // A literal scope (`tenant_id = ''`) outside the migrations' fixed SQL.
        if !migrations {
            found += matches(#"\btenant_id\s*(?:=|<>)\s*'[^\n]*"#, in: source).map {
                "compares tenant_id with a literal: \($0)"
            }
        }
        // A prepared statement's scope is `$1`, which `append(scope:)` binds.
        for match in matches(#"\btenant_id\s*=\s*\$\d+"#, in: source) where !match.hasSuffix("$1") {
            found.append("a prepared statement's scope is $1: \(match)")
        }
        found += insertViolations(in: source, migrations: migrations)
        found += preparedStatementViolations(in: source, bindingProtocols: bindingProtocols)
        return found
    }

    /// `INSERT INTO t (…, tenant_id, …) VALUES (…)` or `… SELECT …`: the value in `tenant_id`'s place
    /// is a column, a scope binding or `$1`.
    static func insertViolations(in source: String, migrations: Bool) -> [String] {
        var found: [String] = []
        let insert = try! NSRegularExpression(pattern: #"INSERT INTO\s+\w+\s*\(([^)]*)\)\s*(VALUES\s*\(|SELECT\s)"#)
        let text = source as NSString
        for match in insert.matches(in: source, range: NSRange(location: 0, length: text.length)) {
            let columns = text.substring(with: match.range(at: 1)).split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard let position = columns.firstIndex(of: "tenant_id") else { continue }
            let rest = text.substring(from: match.range.location + match.range.length)
            let values = splitList(rest, stopAtFrom: text.substring(with: match.range(at: 2)).hasPrefix("SELECT"))
            guard position < values.count else {
                found.append("an INSERT whose values could not be read: \(columns.joined(separator: ", "))")
                continue
            }
            let value = values[position]
            if value.hasPrefix("\\(") {
                if !allowed.contains(where: { value.hasPrefix("\\(" + $0) }) {
                    found.append("inserts tenant_id without a scope: \(value)")
                }
            } else if value.hasPrefix("$"), value != "$1" {
                found.append("inserts tenant_id from \(value), not $1")
            } else if value.hasPrefix("'"), !migrations {
                found.append("inserts a literal tenant_id: \(value)")
            }
        }
        return found
    }

    /// The items of a list up to its closing parenthesis (VALUES), or up to `FROM` or the string's
    /// end (SELECT), split at the commas outside parentheses.
    static func splitList(_ text: String, stopAtFrom: Bool) -> [String] {
        var items: [String] = []
        var current = ""
        var depth = 0
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if stopAtFrom, depth == 0,
                text[index...].hasPrefix(" FROM ") || text[index...].hasPrefix("\nFROM ")
                    || text[index...].hasPrefix("\"\"\"")
            {
                break
            }
            if character == "(" { depth += 1 }
            if character == ")" {
                if depth == 0 { break }
                depth -= 1
            }
            if character == ",", depth == 0 {
                items.append(current.trimmingCharacters(in: .whitespacesAndNewlines))
                current = ""
            } else {
                current.append(character)
            }
            index = text.index(after: index)
        }
        items.append(current.trimmingCharacters(in: .whitespacesAndNewlines))
        return items
    }

    /// A declaration whose SQL compares `tenant_id` with `$1` binds `$1` with `append(scope:)`: its
    /// own `makeBindings`, or the one of the statement protocol it conforms to.
    static func preparedStatementViolations(in source: String, bindingProtocols: [String]) -> [String] {
        var found: [String] = []
        let declarations = source.components(separatedBy: "\n}\n")
        let bindingProtocols = bindingProtocols + self.bindingProtocols(in: source)
        for declaration in declarations where firstMatch(#"\btenant_id\s*=\s*\$1\b"#, in: declaration) != nil {
            guard let header = firstMatch(#"(?m)^(?:struct|protocol|extension) [^{]*"#, in: declaration) else {
                continue
            }
            if declaration.contains("func makeBindings") {
                if firstMatch(scopeFirst, in: declaration) == nil {
                    found.append("\(header): binds $1 without append(scope:)")
                }
            } else if !bindingProtocols.contains(where: { header.contains($0) }), !header.hasPrefix("protocol") {
                found.append("\(header): its $1 is not bound by append(scope:)")
            }
        }
        return found
    }

    static let scopeFirst =
        #"makeBindings\(\) throws -> PostgresBindings \{\s*var bindings = PostgresBindings\([^)]*\)\s*bindings\.append\(scope:"#

    /// The statement protocols whose extension binds `$1` with `append(scope:)`.
    static func bindingProtocols(in source: String) -> [String] {
        source.components(separatedBy: "\n}\n").compactMap { declaration -> String? in
            guard let name = firstMatch(#"(?<=extension )\w+(?= \{)"#, in: declaration),
                firstMatch(scopeFirst, in: declaration) != nil
            else { return nil }
            return name
        }
    }

    static func matches(_ pattern: String, in source: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: pattern)
        let text = source as NSString
        return regex.matches(in: source, range: NSRange(location: 0, length: text.length)).map {
            text.substring(with: $0.range).trimmingCharacters(in: .whitespaces)
        }
    }

    static func firstMatch(_ pattern: String, in source: String) -> String? {
        matches(pattern, in: source).first
    }

    /// The Swift sources of the services and the shared module.
    static func sources() throws -> [(path: String, text: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var result: [(String, String)] = []
        for directory in ["Services", "Shared"] {
            let base = root.appendingPathComponent(directory)
            guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else {
                continue
            }
            for case let url as URL in walker where url.pathExtension == "swift" {
                result.append(
                    (
                        url.path.replacingOccurrences(of: root.path + "/", with: ""),
                        try String(contentsOf: url, encoding: .utf8)
                    ))
            }
        }
        return result
    }
}

@Suite("tenancy bindings")
struct TenancyBindingTests {
    @Test("every statement of the services binds tenant_id through a scope")
    func everyTenantIdIsAScope() throws {
        let sources = try TenancyBindingAudit.sources()
        #expect(sources.count > 100, "the sources were not found")
        let protocols = sources.flatMap { TenancyBindingAudit.bindingProtocols(in: $0.text) }
        #expect(protocols.contains("ScopedStatement"), "the statement protocols were not found")
        var statements = 0
        for (path, text) in sources {
            statements += TenancyBindingAudit.matches(#"\\\((?:scope|owner):"#, in: text).count
            for violation in TenancyBindingAudit.violations(
                in: text, migrations: path.contains("/Database/Migrations"), bindingProtocols: protocols)
            {
                Issue.record("\(path): \(violation)")
            }
        }
        #expect(statements > 100, "the scope bindings were not found (\(statements))")
    }

    @Test("the audit finds a tenant_id bound another way")
    func auditFindsStrayBindings() {
        let stray: [String] = [
            #"WHERE tenant_id = \(tenantId) AND local_id = \(localId)"#,
            #"WHERE u.tenant_id = \(request.tenantId)"#,
            #"WHERE tenant_id IS NOT DISTINCT FROM \(tenant) AND revoked_at IS NULL"#,
            #"WHERE tenant_id = ANY(\(names))"#,
            #"WHERE \(tenant) = u.tenant_id"#,
            #"WHERE tenant_id = '' AND bucket = \(bucket)"#,
            #"WHERE tenant_id = $2 AND local_id = $1"#,
            #"INSERT INTO users (tenant_id, local_id) VALUES (\(tenant), \(localId))"#,
            #"INSERT INTO audit_log (actor, tenant_id) SELECT 'system', \(name) FROM batch"#,
            """
            struct Stray: PostgresPreparedStatement {
                static let sql = "SELECT 1 FROM users WHERE tenant_id = $1 AND local_id = $2"
                func makeBindings() throws -> PostgresBindings {
                    var bindings = PostgresBindings(capacity: 2)
                    bindings.append(tenantId)
                    bindings.append(localId)
                    return bindings
                }
            }
            """,
        ]
        for source in stray {
            #expect(!TenancyBindingAudit.violations(in: source).isEmpty, "not found: \(source)")
        }
        let fine: [String] = [
            #"WHERE tenant_id = \(scope: scope) AND local_id = \(localId)"#,
            #"WHERE l.tenant_id = u.tenant_id AND l.local_id = u.local_id"#,
            #"WHERE tenant_id IS NOT DISTINCT FROM \(owner: owner)"#,
            #"INSERT INTO users (tenant_id, local_id) VALUES (\(scope: scope), \(localId))"#,
            #"INSERT INTO refresh_tokens (token_hash, tenant_id, family_id) SELECT $11, tenant_id, $9 FROM u"#,
            """
            struct Fine: PostgresPreparedStatement {
                static let sql = "SELECT 1 FROM users WHERE tenant_id = $1 AND local_id = $2"
                func makeBindings() throws -> PostgresBindings {
                    var bindings = PostgresBindings(capacity: 2)
                    bindings.append(scope: scope)
                    bindings.append(localId)
                    return bindings
                }
            }
            """,
        ]
        for source in fine {
            #expect(TenancyBindingAudit.violations(in: source).isEmpty, "found in: \(source)")
        }
    }
}
