import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import PostgresNIO
import Testing

@testable import TesseraConsole
@testable import TesseraShared
@testable import UserDirectory

/// Every console page (issue 38, item 4) rendered through the directory's real router with a console
/// session, over a fixed data set, compared with its golden file in `ConsoleSnapshots/` (the answer's
/// status on the first line, then the HTML). A change to a template or to a page's model shows as a
/// difference here; `TESSERA_UPDATE_SNAPSHOTS=1` writes the goldens anew (and removes those no page
/// renders any more), to be read in the diff before they are committed.
///
/// What the data set cannot fix is replaced before the comparison (`ConsoleSnapshot.normalized`), and
/// nothing else: the sessions' CSRF tokens and the tenant ids (random suffixes) by name, the ids and
/// secrets Tessera generates (credentials, service accounts and their key files) by their shapes, and
/// the times the run itself stamps (audit entries, creation times), which are the only times of the
/// current year or its neighbours: every time of the data set is in 2001, 2090 or 2099.
@Suite("console pages: HTML snapshots", .enabled(if: PostgresSupport.available))
struct ConsoleSnapshotTests {
    @Test("every console page renders as its golden file")
    func everyPageRendersAsItsGolden() async throws {
        let snapshots = ConsoleSnapshot()
        try await InProcess.withSchema { database in
            let app = try await buildDirectoryApplication(
                configuration: InProcess.directoryConfiguration(database: database), logger: InProcess.logger)
            try await app.test(.router) { client in
                let directory = Directory(http: HTTPCaller(client: client))
                try await Self.dataSet(directory, database: database)
                try await Self.pages(directory, database: database, snapshots: snapshots)
            }
        }
        try await Self.errorMappings(snapshots)
        try snapshots.checkEveryGoldenWasRendered()
    }

    // MARK: The data set

    /// The project's users, imported with fixed ids, then given fixed times (and their sessions) in SQL.
    static func dataSet(_ directory: Directory, database: PostgresClient.Configuration) async throws {
        let users = """
            {"users":[
            {"localId":"u-ada","email":"ada@example.com","emailVerified":true,"displayName":"Ada Lovelace",
             "phoneNumber":"+15555550100","customAttributes":"{\\"role\\":\\"admin\\"}","rawPassword":"correct-horse-1",
             "providerUserInfo":[{"providerId":"google.com","rawId":"g-1001","email":"ada@gmail.com"}]},
            {"localId":"u-bob","email":"bob@example.com","displayName":"Bob <b>","disabled":true,"rawPassword":"bobs-own-1"},
            {"localId":"u/cleo","email":"cleo@example.com","emailVerified":true,"customAuth":true,
             "providerUserInfo":[{"providerId":"github.com","rawId":"gh-7","email":"cleo@example.com"}]},
            {"localId":"u-anon-1"},
            {"localId":"u-anon-2"},
            {"localId":"u-anon-3"}
            ]}
            """
        let imported = try expectOK(
            try await directory.admin.post(
                directory.accountsPath(nil, "batchCreate"), users, headers: [.requestID: "snapshot-import"]))
        #expect(imported["error"] == nil, "\(imported)")
        try await sql(
            database,
            """
            UPDATE users SET
                created_at = 978307200000 + 86400000 * (CASE local_id WHEN 'u-ada' THEN 1 WHEN 'u-bob' THEN 2
                    WHEN 'u/cleo' THEN 3 WHEN 'u-anon-1' THEN 4 WHEN 'u-anon-2' THEN 5 ELSE 6 END),
                last_login_at = CASE WHEN local_id IN ('u-ada', 'u/cleo') THEN 978307200000 + 86400000 * 10 END,
                last_refresh_at = CASE WHEN local_id = 'u-ada' THEN 978307200000 + 86400000 * 11 END,
                password_updated_at = CASE WHEN local_id IN ('u-ada', 'u-bob') THEN 978307200000 + 86400000 * 2 END,
                valid_since = 978307200 + 86400 * 14,
                is_anonymous = local_id LIKE 'u-anon-%',
                anonymous_due_at = CASE local_id WHEN 'u-anon-1' THEN timestamptz '2090-01-04 12:00Z'
                    WHEN 'u-anon-2' THEN timestamptz '2090-01-20 12:00Z' WHEN 'u-anon-3' THEN timestamptz '2090-01-02 12:00Z'
                    END
            """)
        // Ada's sessions: active, revoked with a reason, ended, and one from before her tokens' valid-since.
        try await sql(
            database,
            """
            INSERT INTO refresh_families (tenant_id, family_id, local_id, sign_in_provider, auth_time,
                created_at, last_used_at, expires_at, revoked_at, revoked_reason)
            SELECT tenant_id, gen_random_uuid(), local_id, s.provider, 0, s.created, s.used, s.expires, s.revoked, s.reason
            FROM users, (VALUES
                ('password', timestamptz '2001-01-20 08:00Z', timestamptz '2001-01-21 09:30Z',
                    timestamptz '2099-01-01 00:00Z', NULL::timestamptz, NULL),
                ('google.com', timestamptz '2001-01-19 08:00Z', timestamptz '2001-01-19 08:00Z',
                    timestamptz '2099-01-01 00:00Z', timestamptz '2001-01-19 10:00Z', 'sign_out'),
                ('password', timestamptz '2001-01-18 08:00Z', timestamptz '2001-01-18 08:00Z',
                    timestamptz '2001-01-18 09:00Z', NULL, NULL),
                ('password', timestamptz '2001-01-10 08:00Z', timestamptz '2001-01-10 08:00Z',
                    timestamptz '2099-01-01 00:00Z', NULL, NULL)
            ) AS s (provider, created, used, expires, revoked, reason)
            WHERE local_id = 'u-ada'
            """)
        // Ada's second factor (the seed is not opened: the page shows what the factor is, not its secret),
        // which her active session was signed in with.
        try await sql(
            database,
            """
            INSERT INTO mfa_enrollments (tenant_id, local_id, enrollment_id, factor, display_name, totp_secret,
                enrolled_at)
            SELECT tenant_id, local_id, 'mfa-ada-1', 'totp', 'Work phone', 'v1.k.sealed',
                timestamptz '2001-01-15 08:00Z'
            FROM users WHERE local_id = 'u-ada'
            """)
        try await sql(
            database,
            """
            INSERT INTO session_second_factors (tenant_id, family_id, second_factor, second_factor_id)
            SELECT tenant_id, family_id, 'totp', 'mfa-ada-1' FROM refresh_families
            WHERE local_id = 'u-ada' AND last_used_at = timestamptz '2001-01-21 09:30Z'
            """)
    }

    static func sql(_ database: PostgresClient.Configuration, _ query: PostgresQuery) async throws {
        let client = PostgresClient(configuration: database, backgroundLogger: InProcess.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await client.query(query, logger: InProcess.logger)
        }
    }

    // MARK: The pages

    static func pages(
        _ directory: Directory, database: PostgresClient.Configuration, snapshots: ConsoleSnapshot
    ) async throws {
        var browser = ConsoleBrowser(http: directory.http)
        let p = "/console/project"

        try await snapshots.check("sign-in", browser.get("/console/sign-in"))
        try await snapshots.check("sign-in-refused", browser.signIn("tsa_not-a-credential"), status: .unauthorized)
        try await browser.signIn(InProcess.adminToken)
        snapshots.replace(browser.csrf, with: "[csrf]")

        // Tenants first: the home page lists them.
        let acme = try await browser.createTenant("Acme")
        snapshots.replace(acme, with: "[tenant-acme]")
        let beta = try await browser.createTenant("Beta")
        snapshots.replace(beta, with: "[tenant-beta]")
        try await browser.expectRedirect(
            browser.post("/console/tenants/\(beta)/sign-in-methods", ["disableAuth": "on"]))
        try await snapshots.check("home", browser.get("/console/"))
        try await snapshots.check("tenants", browser.get("/console/tenants?notice=created"))
        try await snapshots.check(
            "tenants-name-error", browser.post("/console/tenants", ["displayName": "1 bad"]), status: .badRequest)
        try await snapshots.check(
            "tenants-delete-error", browser.post("/console/tenants/\(acme)/delete", ["confirm": "acme"]),
            status: .badRequest)

        // Users.
        try await snapshots.check("users", browser.get("\(p)/users"))
        try await snapshots.check(
            "users-filtered", browser.get("\(p)/users?q=cleo&provider=github.com&show=all&sort=login-asc"))
        try await snapshots.check("users-anonymous", browser.get("\(p)/users?show=anonymous&sort=created-asc"))
        try await snapshots.check("users-second-page", browser.get("\(p)/users?page=1&notice=deleted"))
        try await snapshots.check(
            "users-new-email-error",
            browser.post(
                "\(p)/users",
                ["email": "not-an-address", "password": "x", "displayName": "Eve <e>", "emailVerified": "on"]),
            status: .badRequest)
        try await snapshots.check(
            "users-new-password-error",
            browser.post("\(p)/users", ["email": "eve@example.com", "password": "abc"]), status: .badRequest)
        try await snapshots.check("user", browser.get("\(p)/users/u-ada?notice=saved"))
        try await snapshots.check("user-encoded-id", browser.get("\(p)/users/u%2Fcleo"))
        try await snapshots.check("user-disabled", browser.get("\(p)/users/u-bob"))
        try await snapshots.check("user-anonymous", browser.get("\(p)/users/u-anon-1"))
        try await snapshots.check(
            "user-profile-error",
            browser.post(
                "\(p)/users/u-ada/profile",
                [
                    "displayName": "Ada", "email": "ada@example.com", "phoneNumber": "12",
                    "claims": #"{"role":"admin"}"#,
                ]),
            status: .badRequest)
        try await snapshots.check(
            "user-delete-error", browser.post("\(p)/users/u-ada/delete", ["confirm": "ada"]), status: .badRequest)
        try await snapshots.check("transfer", browser.get("\(p)/transfer"))

        // The scope's settings.
        try await snapshots.check("methods", browser.get("\(p)/sign-in-methods?notice=saved"))
        try await snapshots.check(
            "methods-domains-error",
            browser.post("\(p)/authorized-domains", ["authorizedDomains": "example.com\nnot a domain"]),
            status: .badRequest)
        try await snapshots.check("methods-tenant", browser.get("/console/tenants/\(acme)/sign-in-methods"))
        try await snapshots.check(
            "methods-sms-error",
            browser.post(
                "/console/tenants/\(acme)/sms-settings",
                [
                    "testPhoneNumbers": "+1 650-555-0123 123456\n+1 650-555-0199 12", "regionPolicy": "only",
                    "regions": "",
                ]),
            status: .badRequest)
        try await snapshots.check(
            "methods-sms-regions-error",
            browser.post(
                "/console/tenants/\(acme)/sms-settings",
                ["testPhoneNumbers": "", "regionPolicy": "except", "regions": "US, Germany"]),
            status: .badRequest)
        try await browser.expectRedirect(
            browser.post(
                "/console/tenants/\(acme)/sms-settings",
                ["testPhoneNumbers": "+1 650-555-0123 123456", "regionPolicy": "only", "regions": "us ca"]))
        try await snapshots.check("methods-tenant-sms", browser.get("/console/tenants/\(acme)/sign-in-methods"))

        let appleKey = P256.Signing.PrivateKey().pemRepresentation
        try await browser.expectRedirect(
            browser.post(
                "\(p)/providers/apple.com",
                [
                    "enabled": "on", "clientId": "com.example.web", "clientSecret": "s3cret",
                    "appleTeamId": "TEAM123", "appleKeyId": "KEY456", "applePrivateKey": appleKey,
                ]))
        try await browser.expectRedirect(
            browser.post("\(p)/providers/google.com", ["clientId": "google-client.apps.example"]))
        try await browser.expectRedirect(
            browser.post(
                "\(p)/providers/oidc",
                [
                    "providerId": "oidc.corp", "displayName": "Corp SSO", "issuer": "https://sso.example.com",
                    "clientId": "corp-client", "trustedEmailDomains": "example.com, example.org", "enabled": "on",
                ]))
        try await snapshots.check("providers", browser.get("\(p)/providers?notice=saved"))
        try await snapshots.check(
            "providers-new-error",
            browser.post("\(p)/providers/oidc", ["providerId": "oidc.new", "issuer": "http://x.example.com"]),
            status: .badRequest)
        try await snapshots.check(
            "providers-built-in-error", browser.post("\(p)/providers/github.com", ["enabled": "on"]),
            status: .badRequest)
        try await snapshots.check(
            "providers-oidc-error",
            browser.post("\(p)/providers/oidc/oidc.corp", ["trustedEmailDomains": "a@b"]), status: .badRequest)
        try await snapshots.check("providers-tenant", browser.get("/console/tenants/\(acme)/providers"))

        try await browser.expectRedirect(
            browser.post(
                "\(p)/templates/PASSWORD_RESET",
                ["subject": "Reset for %APP_NAME%", "body": "Hello %DISPLAY_NAME%,\r\nopen %LINK%\r\n<the team>"]))
        try await snapshots.check("templates", browser.get("\(p)/templates?notice=saved"))
        try await snapshots.check(
            "templates-error",
            browser.post("\(p)/templates/VERIFY_EMAIL", ["subject": "Verify", "body": "no link here"]),
            status: .badRequest)

        try await snapshots.check("cleanup", browser.get("\(p)/cleanup"))
        try await snapshots.check("cleanup-empty", browser.get("/console/tenants/\(acme)/cleanup"))

        try await snapshots.check(
            "credentials-created", browser.post("\(p)/credentials", ["displayName": "Deploy <bot>"]))
        try await snapshots.check("credentials", browser.get("\(p)/credentials?notice=revoked-credential"))
        try await snapshots.check(
            "credentials-name-error", browser.post("\(p)/credentials", ["displayName": " "]))
        try await snapshots.check("credentials-tenant-empty", browser.get("/console/tenants/\(acme)/credentials"))

        try await snapshots.check(
            "service-accounts-created", browser.post("\(p)/service-accounts", ["displayName": "Backend"]))
        try await snapshots.check("service-accounts", browser.get("\(p)/service-accounts"))
        try await snapshots.check("service-accounts-empty", browser.get("/console/tenants/\(acme)/service-accounts"))

        try await snapshots.check("audit", browser.get("\(p)/audit"))
        try await snapshots.check("audit-filtered", browser.get("\(p)/audit?actor=bootstrap&action=providers"))
        try await snapshots.check("audit-empty", browser.get("\(p)/audit?actor=nobody"))

        // Error pages through the router.
        try await snapshots.check("error-user-not-found", browser.get("\(p)/users/nobody"), status: .notFound)
        try await snapshots.check(
            "error-sign-in-disabled", browser.get("/console/tenants/\(beta)/users"), status: .badRequest)
        try await snapshots.check(
            "error-request-refused", browser.post("\(p)/cleanup", ["enabled": "maybe"]), status: .badRequest)
        try await snapshots.check(
            "error-stale-form", browser.post("\(p)/cleanup", ["enabled": "on"], csrf: "stale"), status: .forbidden)
        try await snapshots.check(
            "error-cross-site",
            browser.post("\(p)/cleanup", ["enabled": "on"], headers: [HTTPField.Name("Sec-Fetch-Site")!: "cross-site"]),
            status: .forbidden)

        // A tenant's admin: its own tenant only, without the project's links.
        let created = try await browser.post("/console/tenants/\(acme)/credentials", ["displayName": "Acme admin"])
        let secret = try #require(created.text.firstMatch(of: /tsa_[A-Za-z0-9_-]+/)).output
        var tenantAdmin = ConsoleBrowser(http: directory.http)
        try await tenantAdmin.signIn(String(secret))
        snapshots.replace(tenantAdmin.csrf, with: "[csrf-tenant-admin]")
        try await snapshots.check("users-tenant-admin", tenantAdmin.get("/console/tenants/\(acme)/users"))
        try await snapshots.check("error-not-allowed", tenantAdmin.get("/console/tenants"), status: .forbidden)
    }

    /// The API errors no request through the router runs into here, rendered as the middleware renders
    /// them (`ConsoleViews.error(for:)`).
    static func errorMappings(_ snapshots: ConsoleSnapshot) async throws {
        let views = try ConsoleViews()
        let errors: [(String, FirebaseError)] = [
            ("error-map-unauthorized", .invalidCredentials), ("error-map-forbidden", .insufficientPermission),
            ("error-map-too-many", .tooManyAttempts(retryAfterSeconds: 30)),
            ("error-map-unavailable", .unavailable("database")), ("error-map-internal", .internal),
            ("error-map-tenant-not-found", .invalid(.tenantNotFound)),
            ("error-map-refused", .invalidArgument("INVALID_ARGUMENT : the <form> is wrong")),
        ]
        for (name, error) in errors {
            let response = views.error(for: error)
            snapshots.check(name, status: response.status, html: try await response.bodyText())
        }
    }
}

// MARK: - A browser for the console

/// Requests as the console's pages make them: the session cookie, the session's CSRF token in forms,
/// `Sec-Fetch-Site: same-origin`, and a request id of its own for each (the audit log shows them).
struct ConsoleBrowser {
    let http: HTTPCaller
    var cookie: String?
    var csrf = ""
    var sent = 0

    init(http: HTTPCaller) { self.http = http }

    mutating func headers() -> HTTPFields {
        sent += 1
        var fields: HTTPFields = [.requestID: "snapshot-\(sent)", HTTPField.Name("Sec-Fetch-Site")!: "same-origin"]
        if let cookie { fields[.cookie] = cookie }
        return fields
    }

    mutating func get(_ path: String) async throws -> Answer {
        try await http.request(.get, path, headers: headers())
    }

    /// A form's POST with the session's CSRF token (or `csrf`'s).
    mutating func post(
        _ path: String, _ fields: [String: String], csrf: String? = nil, headers extra: HTTPFields = [:]
    ) async throws -> Answer {
        var form = fields
        if cookie != nil { form["csrf"] = csrf ?? self.csrf }
        var headers = headers()
        headers[.contentType] = "application/x-www-form-urlencoded"
        for field in extra { headers[field.name] = field.value }
        return try await http.request(.post, path, body: Self.encoded(form), headers: headers)
    }

    static func encoded(_ form: [String: String]) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        return form.sorted { $0.key < $1.key }.map {
            "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
    }

    /// Signs in with `credential`: the session cookie and the CSRF token of its pages when it is valid.
    @discardableResult
    mutating func signIn(_ credential: String) async throws -> Answer {
        let answer = try await post("/console/sign-in", ["credential": credential])
        guard answer.status == .seeOther else { return answer }
        let setCookie = try #require(answer.headers[.setCookie])
        cookie = String(try #require(setCookie.split(separator: ";").first))
        csrf = try await csrfToken()
        return answer
    }

    /// The session's CSRF token, as the sign-out form of any signed-in page carries it.
    mutating func csrfToken() async throws -> String {
        var page = try await get("/console/")
        // A tenant's admin is sent on to its tenant's users.
        if page.status == .seeOther, let location = page.headers[.location] { page = try await get(location) }
        let match = try #require(page.text.firstMatch(of: /name="csrf" value="([^"]+)"/), "\(page)")
        return String(match.output.1)
    }

    /// A new tenant made with the console's form: its id, from where the form sends the browser.
    mutating func createTenant(_ name: String) async throws -> String {
        let answer = try await post("/console/tenants", ["displayName": name])
        let location = try #require(answer.headers[.location], "\(answer)")
        let match = try #require(location.firstMatch(of: #/^/console/tenants/([^/]+)/#), "\(answer)")
        return String(match.output.1)
    }

    func expectRedirect(_ answer: Answer, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(answer.status == .seeOther, "\(answer)", sourceLocation: sourceLocation)
    }
}

// MARK: - Golden files

/// The golden files under `ConsoleSnapshots/` and what is replaced before comparing with them.
final class ConsoleSnapshot: @unchecked Sendable {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("ConsoleSnapshots")
    static let updating = ProcessInfo.processInfo.environment["TESSERA_UPDATE_SNAPSHOTS"] == "1"

    private let lock = NSLock()
    private var replacements: [(String, String)] = []
    private var rendered: Set<String> = []

    /// `value`, wherever it shows, becomes `placeholder` (a value the run generated).
    func replace(_ value: String, with placeholder: String) {
        lock.withLock { replacements.append((value, placeholder)) }
    }

    func check(
        _ name: String, _ answer: Answer, status: HTTPResponse.Status = .ok,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(answer.status == status, "\(name): \(answer)", sourceLocation: sourceLocation)
        #expect(
            answer.headers[.contentType] == "text/html; charset=utf-8", "\(name): \(answer)",
            sourceLocation: sourceLocation)
        check(name, status: answer.status, html: answer.text, sourceLocation: sourceLocation)
    }

    func check(
        _ name: String, status: HTTPResponse.Status, html: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let text = "<!-- HTTP \(status.code) -->\n" + normalized(html)
        let file = Self.directory.appendingPathComponent(name + ".html")
        lock.withLock { _ = rendered.insert(file.lastPathComponent) }
        if Self.updating {
            try? FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
            #expect(throws: Never.self) { try text.write(to: file, atomically: true, encoding: .utf8) }
            return
        }
        guard let golden = try? String(contentsOf: file, encoding: .utf8) else {
            Issue.record(
                "no golden file \(file.lastPathComponent); run with TESSERA_UPDATE_SNAPSHOTS=1 to write it",
                sourceLocation: sourceLocation)
            return
        }
        guard golden != text else { return }
        let (old, new) = (golden.components(separatedBy: "\n"), text.components(separatedBy: "\n"))
        let line = old.indices.first { $0 >= new.count || old[$0] != new[$0] } ?? old.count
        Issue.record(
            """
            \(name) differs from its golden file at line \(line + 1):
              golden:   \(line < old.count ? old[line] : "(end)")
              rendered: \(line < new.count ? new[line] : "(end)")
            (TESSERA_UPDATE_SNAPSHOTS=1 writes the goldens anew.)
            """, sourceLocation: sourceLocation)
    }

    /// Every golden file was rendered by some page; when updating, those no page renders are removed.
    func checkEveryGoldenWasRendered() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path)
            .filter { $0.hasSuffix(".html") }
        for file in files where !lock.withLock({ rendered.contains(file) }) {
            if Self.updating {
                try FileManager.default.removeItem(at: Self.directory.appendingPathComponent(file))
            } else {
                Issue.record("no page renders the golden file \(file)")
            }
        }
    }

    /// The HTML with what the run generated replaced (see `ConsoleSnapshotTests`).
    func normalized(_ html: String) -> String {
        var text = html
        for (value, placeholder) in lock.withLock({ replacements }) where !value.isEmpty {
            text = text.replacingOccurrences(of: value, with: placeholder)
        }
        text = text.replacing(/cred-[a-z0-9]{16}/, with: "[credential-id]")
        text = text.replacing(/tsa_[A-Za-z0-9_-]{43}/, with: "[secret]")
        text = text.replacing(/sa-[a-z0-9]{16}/, with: "[account-id]")
        text = text.replacing(/\b[0-9a-f]{40}\b/, with: "[key-id]")
        text = text.replacing(/\b1[0-9]{20}\b/, with: "[client-id]")
        text = text.replacing(
            /-----BEGIN PRIVATE KEY-----.*?-----END PRIVATE KEY-----/.dotMatchesNewlines(), with: "[private-key]")
        let year = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: Date()).year!
        text = text.replacing(/(\d{4})-\d{2}-\d{2} \d{2}:\d{2} UTC/) { match in
            guard let found = Int(match.output.1), abs(found - year) <= 1 else { return String(match.output.0) }
            return "[run time]"
        }
        return text
    }
}

extension Response {
    /// The body's text.
    func bodyText() async throws -> String {
        let collected = CollectedBody()
        try await body.write(BodyCollector(collected: collected))
        return String(buffer: collected.buffer)
    }
}

final class CollectedBody: @unchecked Sendable {
    var buffer = ByteBuffer()
}

/// Writes a response's body into `collected` (the writer is consumed by the body).
struct BodyCollector: ResponseBodyWriter {
    let collected: CollectedBody

    mutating func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        collected.buffer.writeBuffer(&buffer)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
