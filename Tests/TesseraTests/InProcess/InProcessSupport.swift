import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import PostgresNIO
import Testing

@testable import TesseraShared
@testable import TokenService
@testable import UserDirectory

/// In-process HTTP tests (issue 24, item 5): each service's real application builder
/// (`buildDirectoryApplication`, `buildTokenApplication`) driven through HummingbirdTesting, on a real
/// PostgreSQL with a fresh schema per test (PostgresSupport's pattern). What needs another process —
/// the ingress, the SMTP sink, an identity provider — stays with the whole-stack tests.
enum InProcess {
    static let projectID = "inproc-project"
    static let adminToken = "inproc-admin-" + Secrets.randomAlphanumeric(24)
    static let internalSecret = "inproc-internal-" + Secrets.randomAlphanumeric(24)
    static let apiKey = "AIzaInProc" + Secrets.randomAlphanumeric(29)
    static let publicURL = "http://localhost:8080"
    static let logger: Logger = {
        var logger = Logger(label: "inproc")
        // Errors only: a 500 is logged as one (FirebaseErrorMiddleware), and each is a bug to see.
        logger.logLevel = .error
        return logger
    }()

    /// Runs `body` with a PostgreSQL configuration whose `search_path` is a migrated schema of its own
    /// (`PostgresSupport.withSchema`, a `SchemaPool` schema). The directory takes a
    /// `PostgresClient.Configuration`, so the schema needs no hook of its own: the startup parameter is
    /// set on the configuration the service is given; its automatic migration finds nothing to do.
    static func withSchema<T: Sendable>(
        _ body: @Sendable (PostgresClient.Configuration) async throws -> T
    ) async throws -> T {
        // Tests run in parallel against one server: a small pool each.
        try await PostgresSupport.withSchema(migrated: true, connections: 4, body)
    }

    static func directoryConfiguration(database: PostgresClient.Configuration) -> DirectoryConfiguration {
        var configuration = DirectoryConfiguration(
            projectID: projectID, adminToken: adminToken, internalSecret: internalSecret,
            database: DatabaseTarget(single: database),
            autoMigrate: true)
        configuration.passwordHashRounds = 8
        configuration.passwordHashMemCost = 8
        configuration.hashThreads = 1
        // Tests run in parallel on few cores: idle-priority hashing threads would wait behind them all.
        configuration.hashPriority = .normal
        configuration.heapTrimInterval = .zero
        // Links admins ask for point where the stack's do (it sets TESSERA_PUBLIC_URL).
        configuration.links = ActionLinks(
            actionURL: nil, publicURL: publicURL, apiKey: apiKey,
            authorizedDomains: ActionLinks.defaultAuthorizedDomains)
        return configuration
    }

    /// The user-directory, built by its own builder and driven through its router (no socket).
    static func withDirectory<T: Sendable>(_ test: @Sendable (Directory) async throws -> T) async throws -> T {
        try await withSchema { database in
            let app = try await buildDirectoryApplication(
                configuration: directoryConfiguration(database: database), logger: logger)
            return try await app.test(.router) { client in
                try await test(Directory(http: HTTPCaller(client: client)))
            }
        }
    }

    /// Both services: the directory listening on a free port (the token service calls it over HTTP,
    /// through its real `DirectoryClient`), the token service driven through its router.
    static func withTokenService<T: Sendable>(
        configure: @Sendable (inout TokenServiceConfiguration) -> Void = { _ in },
        _ test: @Sendable (TokenHarness) async throws -> T
    ) async throws -> T {
        let keys = try signingKeys.get()
        return try await withSchema { database in
            let directoryApp = try await buildDirectoryApplication(
                configuration: directoryConfiguration(database: database), logger: logger)
            return try await directoryApp.test(.live) { directoryClient in
                let port = try #require(directoryClient.port)
                var configuration = TokenServiceConfiguration(
                    projectID: projectID, apiKey: apiKey, internalSecret: internalSecret,
                    signingKeysDirectory: keys.signing)
                configuration.sessionCookieKeysDirectory = keys.sessionCookies
                configuration.directoryURL = "http://localhost:\(port)"
                configuration.publicURL = publicURL
                configuration.keyReloadInterval = .zero
                configure(&configuration)
                let tokenApp = try buildTokenApplication(configuration: configuration, logger: logger)
                return try await tokenApp.test(.router) { tokenClient in
                    try await test(
                        TokenHarness(
                            client: HTTPCaller(client: tokenClient, apiKey: apiKey),
                            directory: Directory(http: HTTPCaller(client: directoryClient)),
                            issuer: IDTokenIssuer(keys: try KeyStore(directory: keys.signing), projectID: projectID),
                            database: database))
                }
            }
        }
    }

    /// One key directory for the ID tokens and one for session cookies, made once per test process
    /// (the services only read them; two RSA keys take about half a second in a debug build) and
    /// removed when the process exits.
    static let signingKeys = Result { () throws -> (signing: String, sessionCookies: String) in
        let directory = keysDirectory
        try KeyDirectory.generate(into: directory, lead: .zero)
        let cookies = TokenServiceConfiguration.defaultSessionCookieKeysDirectory(directory)
        try KeyDirectory.generate(into: cookies, lead: .zero)
        atexit { try? FileManager.default.removeItem(atPath: InProcess.keysDirectory) }
        return (directory, cookies)
    }

    static let keysDirectory = FileManager.default.temporaryDirectory
        .appendingPathComponent("tessera-inproc-keys-\(UUID().uuidString)").path

    /// A tenant display name: 4–20 characters, a letter first (conftest's `unique_name`).
    static func uniqueName(_ prefix: String = "t") -> String {
        prefix + Secrets.randomAlphanumeric(10).lowercased()
    }

    static func uniqueEmail(_ prefix: String = "user") -> String {
        "\(prefix)-\(Secrets.randomAlphanumeric(12).lowercased())@example.com"
    }
}

/// The real-PostgreSQL requirement of `make test`, checked by this suite too so that
/// `--filter InProcess` fails rather than skips everything when the database is missing.
@Suite("in-process HTTP tests: database requirement")
struct InProcessDatabaseRequirementTests {
    @Test("the in-process tests have a database when make test requires one")
    func databaseIsConfiguredWhenRequired() {
        if PostgresSupport.required {
            #expect(PostgresSupport.available, "TEST_DATABASE_URL is not set but TESSERA_REQUIRE_DATABASE=1")
        }
    }
}

// MARK: - Calling a service

/// One answer: status, headers and body, with the request it answered for messages.
struct Answer: Sendable, CustomStringConvertible {
    let request: String
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let text: String

    var json: JSONValue? { try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }

    var description: String { "\(request) -> HTTP \(status.code) \(text.prefix(600))" }
}

/// Requests to one in-process service. `apiKey` goes in `?key=` (as the SDKs send it), `bearer` in
/// `Authorization`.
struct HTTPCaller: Sendable {
    let client: any TestClientProtocol
    var apiKey: String?
    var bearer: String?

    init(client: any TestClientProtocol, apiKey: String? = nil, bearer: String? = nil) {
        self.client = client
        self.apiKey = apiKey
        self.bearer = bearer
    }

    /// The same caller with another API key (nil: none).
    func key(_ apiKey: String?) -> HTTPCaller {
        HTTPCaller(client: client, apiKey: apiKey, bearer: bearer)
    }

    /// The same caller with another bearer (nil: none).
    func bearer(_ bearer: String?) -> HTTPCaller {
        HTTPCaller(client: client, apiKey: apiKey, bearer: bearer)
    }

    /// `body` is sent as it is, as JSON unless `headers` say otherwise.
    func request(
        _ method: HTTPRequest.Method, _ path: String, body: String? = nil, headers: HTTPFields = [:]
    ) async throws -> Answer {
        try await request(method, path, bytes: body.map { Array($0.utf8) }, headers: headers)
    }

    /// A body of any bytes, UTF-8 or not.
    func request(
        _ method: HTTPRequest.Method, _ path: String, bytes body: [UInt8]?, headers: HTTPFields = [:]
    ) async throws -> Answer {
        var uri = path
        if let apiKey {
            uri += (path.contains("?") ? "&" : "?") + "key=\(apiKey)"
        }
        var fields = headers
        if let bearer, fields[.authorization] == nil { fields[.authorization] = "Bearer \(bearer)" }
        if body != nil, fields[.contentType] == nil { fields[.contentType] = "application/json" }
        let response = try await client.executeRequest(
            uri: uri, method: method, headers: fields, body: body.map { ByteBuffer(bytes: $0) })
        let shown = body.map { " body=\(String(decoding: $0.prefix(300), as: UTF8.self))" } ?? ""
        return Answer(
            request: "\(method.rawValue) \(path)\(shown)",
            status: response.status, headers: response.headers, text: String(buffer: response.body))
    }

    func post(_ path: String, _ body: String = "{}", headers: HTTPFields = [:]) async throws -> Answer {
        try await request(.post, path, body: body, headers: headers)
    }

    func get(_ path: String, headers: HTTPFields = [:]) async throws -> Answer {
        try await request(.get, path, headers: headers)
    }
}

/// The directory's admin API as the bootstrap admin, and the helpers the tests share.
struct Directory: Sendable {
    let http: HTTPCaller
    var admin: HTTPCaller { http.bearer(InProcess.adminToken) }

    var tenantsPath: String { "/v2/projects/\(InProcess.projectID)/tenants" }

    func accountsPath(_ tenant: String?, _ action: String) -> String {
        "/v1/projects/\(InProcess.projectID)\(tenant.map { "/tenants/\($0)" } ?? "")/accounts:\(action)"
    }

    /// A new tenant (conftest's `tenant_body`): anonymous sign-up on, the rest off, unless `fields` (a
    /// JSON object's members) say otherwise.
    func createTenant(_ fields: String = "") async throws -> JSONValue {
        var body: [String: JSONValue] = [
            "displayName": .string(InProcess.uniqueName()), "allowPasswordSignup": .bool(false),
            "enableAnonymousUser": .bool(true),
        ]
        let overrides = try JSONDecoder().decode([String: JSONValue].self, from: Data("{\(fields)}".utf8))
        body.merge(overrides) { _, override in override }
        let json = String(decoding: try JSONEncoder().encode(body), as: UTF8.self)
        let tenant = try expectOK(try await admin.post(tenantsPath, json))
        _ = try #require(tenant["tenantId"]?.stringValue)
        return tenant
    }

    func createTenantID(_ fields: String = "") async throws -> String {
        try #require(try await createTenant(fields)["tenantId"]?.stringValue)
    }

    var configPath: String { "/v2/projects/\(InProcess.projectID)/config" }

    /// An admin PATCH with `updateMask` (conftest's `patch_tenant` / `patch_config`).
    func patch(_ path: String, _ body: String, mask: String? = nil) async throws -> Answer {
        try await admin.request(.patch, path + (mask.map { "?updateMask=\($0)" } ?? ""), body: body)
    }

    /// An admin's deletion of one user (conftest's `delete_user_raw`).
    func deleteUser(_ tenant: String?, _ localId: String) async throws -> Answer {
        try await admin.post(accountsPath(tenant, "delete"), #"{"localId":"\#(localId)"}"#)
    }

    /// The localIds an admin lookup finds (an absent `users` means none).
    func lookupUsers(_ tenant: String?, _ localIds: [String]) async throws -> [JSONValue] {
        let data = try expectOK(
            try await admin.post(accountsPath(tenant, "lookup"), #"{"localId":\#(json(localIds))}"#))
        #expect(data["kind"]?.stringValue == "identitytoolkit#GetAccountInfoResponse")
        return data["users"]?.arrayValue ?? []
    }
}

/// The token service (router) in front of a live directory.
struct TokenHarness: Sendable {
    /// End-user calls: every request carries the API key.
    let client: HTTPCaller
    let directory: Directory
    let issuer: IDTokenIssuer
    /// The test's schema, for what no API shows (the mail outbox).
    var database: PostgresClient.Configuration? = nil

    struct Session: Sendable {
        let localId: String
        let idToken: String
        let refreshToken: String
    }

    /// An anonymous sign-up's answer, whatever it is (conftest's `sign_up_raw`).
    func signUpRaw(_ tenant: String?) async throws -> Answer {
        let body = tenant.map { #"{"returnSecureToken":true,"tenantId":"\#($0)"}"# } ?? #"{"returnSecureToken":true}"#
        return try await client.post("/v1/accounts:signUp", body)
    }

    func signUpAnonymous(_ tenant: String?) async throws -> Session {
        let data = try expectOK(try await signUpRaw(tenant))
        return Session(
            localId: try #require(data["localId"]?.stringValue), idToken: try #require(data["idToken"]?.stringValue),
            refreshToken: try #require(data["refreshToken"]?.stringValue))
    }

    func lookup(_ idToken: String?, tenant: String? = nil, prefix: String = "") async throws -> Answer {
        try await client.post("\(prefix)/v1/accounts:lookup", body(idToken: idToken, tenant: tenant))
    }

    func delete(_ idToken: String?, tenant: String? = nil, prefix: String = "") async throws -> Answer {
        try await client.post("\(prefix)/v1/accounts:delete", body(idToken: idToken, tenant: tenant))
    }

    private func body(idToken: String?, tenant: String?) -> String {
        let members = [idToken.map { #""idToken":"\#($0)""# }, tenant.map { #""tenantId":"\#($0)""# }]
        return "{\(members.compactMap { $0 }.joined(separator: ","))}"
    }

    /// `/v1/token` with a form body (the REST default), as conftest's `refresh_raw`.
    func refreshRaw(_ refreshToken: String?, grantType: String? = "refresh_token", prefix: String = "")
        async throws -> Answer
    {
        var fields: [String] = []
        if let grantType { fields.append("grant_type=\(grantType)") }
        if let refreshToken { fields.append("refresh_token=\(refreshToken)") }
        return try await client.request(
            .post, "\(prefix)/v1/token", body: fields.joined(separator: "&"),
            headers: [.contentType: "application/x-www-form-urlencoded"])
    }

    /// A successful refresh: the new pair and the user.
    func refresh(_ refreshToken: String) async throws -> JSONValue {
        let data = try expectOK(try await refreshRaw(refreshToken))
        for name in ["id_token", "refresh_token", "user_id"] {
            #expect(data[name]?.stringValue?.isEmpty == false, "\(name) missing: \(data)")
        }
        return data
    }

    /// The mails queued for `recipient` (`mail_outbox`), oldest first: subject and body.
    func mails(to recipient: String) async throws -> [(subject: String, body: String)] {
        let configuration = try #require(database)
        let client = PostgresClient(configuration: configuration, backgroundLogger: InProcess.logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let rows = try await client.query(
                "SELECT subject, coalesce(body, '') FROM mail_outbox WHERE recipient = \(recipient) ORDER BY id",
                logger: InProcess.logger)
            var mails: [(subject: String, body: String)] = []
            for try await (subject, body) in rows.decode((String, String).self) { mails.append((subject, body)) }
            return mails
        }
    }

    /// The `oobCode` of the action link in a mail's body.
    func oobCode(inMail body: String) throws -> String {
        let link = try #require(
            body.split(whereSeparator: \.isWhitespace).first { $0.contains("oobCode=") }, "no link in: \(body)")
        let components = try #require(URLComponents(string: String(link)))
        return try #require(components.queryItems?.first { $0.name == "oobCode" }?.value)
    }

    /// The claims of an ID token whose signature and standard claims verify against the service's keys.
    func verify(_ idToken: String?) throws -> JSONValue {
        let token = try #require(idToken)
        _ = try issuer.verifySignatureAndClaims(token)
        return try claims(token)
    }
}

/// A JWT's payload, unverified.
func claims(_ token: String) throws -> JSONValue {
    let parts = token.split(separator: ".")
    try #require(parts.count == 3, "not a JWT: \(token)")
    let payload = try #require(Base64URL.decode(parts[1]))
    return try JSONDecoder().decode(JSONValue.self, from: payload)
}

/// `values` as a JSON array of strings.
func json(_ values: [String]) -> String {
    String(decoding: try! JSONEncoder().encode(values), as: UTF8.self)
}

extension JSONValue {
    subscript(index: Int) -> JSONValue? {
        guard let array = arrayValue, array.indices.contains(index) else { return nil }
        return array[index]
    }
}

// MARK: - Expectations (Tests/stack/conftest.py's, for the same wire shapes)

/// HTTP 200 with a JSON object that is no error envelope; returns it. (An `error` array is no envelope:
/// `accounts:batchCreate` reports its per-user failures so.)
@discardableResult
func expectOK(_ answer: Answer, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONValue {
    try #require(answer.status == .ok, "\(answer)", sourceLocation: sourceLocation)
    let json = try #require(answer.json, "not JSON: \(answer)", sourceLocation: sourceLocation)
    try #require(json.objectValue != nil, "\(answer)", sourceLocation: sourceLocation)
    try #require(json["error"]?.objectValue == nil, "\(answer)", sourceLocation: sourceLocation)
    return json
}

/// The Google error envelope (docs/protocol/README.md#errors, conftest's `assert_error_shape`); returns the
/// `error` object.
@discardableResult
func expectErrorShape(
    _ answer: Answer, _ status: HTTPResponse.Status, sourceLocation: SourceLocation = #_sourceLocation
) throws -> JSONValue {
    try #require(answer.status == status, "expected HTTP \(status.code): \(answer)", sourceLocation: sourceLocation)
    let error = try #require(answer.json?["error"], "\(answer)", sourceLocation: sourceLocation)
    #expect(error["code"]?.intValue == Int64(status.code), "\(answer)", sourceLocation: sourceLocation)
    let message = try #require(error["message"]?.stringValue, "\(answer)", sourceLocation: sourceLocation)
    #expect(!message.isEmpty, "\(answer)", sourceLocation: sourceLocation)
    let first = try #require(error["errors"]?[0], "\(answer)", sourceLocation: sourceLocation)
    #expect(first["message"]?.stringValue == message, "\(answer)", sourceLocation: sourceLocation)
    #expect(first["reason"]?.stringValue?.isEmpty == false, "\(answer)", sourceLocation: sourceLocation)
    #expect(first["domain"]?.stringValue?.isEmpty == false, "\(answer)", sourceLocation: sourceLocation)
    return error
}

/// A business error (HTTP 400 without `status`, reason `invalid`, domain `global`) whose code is one
/// of `codes` (conftest's `expect_error`); returns the code received.
@discardableResult
func expectError(
    _ answer: Answer, _ codes: String..., status: HTTPResponse.Status = .badRequest,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> String {
    let error = try expectErrorShape(answer, status, sourceLocation: sourceLocation)
    let message = error["message"]?.stringValue ?? ""
    let code = message.components(separatedBy: " : ")[0].trimmingCharacters(in: .whitespaces)
    #expect(
        codes.contains(code), "expected \(codes.joined(separator: " or ")): \(answer)", sourceLocation: sourceLocation)
    if status == .badRequest {
        #expect(error["status"] == nil, "business errors carry no status: \(answer)", sourceLocation: sourceLocation)
        #expect(error["errors"]?[0]?["reason"]?.stringValue == "invalid", "\(answer)", sourceLocation: sourceLocation)
        #expect(error["errors"]?[0]?["domain"]?.stringValue == "global", "\(answer)", sourceLocation: sourceLocation)
    }
    return code
}

/// A non-business error, with its gRPC-style `status` (conftest's `expect_status_error`).
@discardableResult
func expectStatusError(
    _ answer: Answer, _ status: HTTPResponse.Status, _ grpcStatus: String,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> JSONValue {
    let error = try expectErrorShape(answer, status, sourceLocation: sourceLocation)
    #expect(
        error["status"]?.stringValue == grpcStatus, "expected status \(grpcStatus): \(answer)",
        sourceLocation: sourceLocation)
    return error
}
