import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import TesseraShared

/// Where a call goes: the default scope (`/projects/{p}`) or a tenant (`/projects/{p}/tenants/{t}`).
struct Scope: Sendable, Equatable {
    var tenantID: String?

    static let project = Scope(tenantID: nil)

    var label: String { tenantID.map { "tenant \($0)" } ?? "the default scope" }
}

/// The admin plane over HTTP (docs/protocol/admin.md#the-admin-plane): one client per command, the credential
/// in every call's `Authorization` header and nowhere else (never printed, never logged).
final class AdminClient: Sendable {
    let http: HTTPClient
    let baseURL: String
    let projectID: String
    private let authorization: String
    let timeout: Duration

    init(baseURL: String, projectID: String, token: String, timeout: Duration) {
        var configuration = HTTPClient.Configuration()
        let connect = min(timeout, .seconds(10))
        configuration.timeout = .init(connect: .milliseconds(Int64(connect.timeInterval * 1000)), read: nil)
        // A refused connection fails at once (exit 5) instead of retrying with a backoff until the deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        // A redirect is reported, not followed: the credential goes only where --admin-url says.
        configuration.redirectConfiguration = .disallow
        configuration.tracing.tracer = nil
        http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        self.baseURL = baseURL
        self.projectID = projectID
        self.authorization = "Bearer " + token
        self.timeout = timeout
    }

    /// Runs `body` with a client and shuts the client down afterwards, whatever happened.
    static func with<T>(_ options: GlobalOptions, _ body: (AdminClient) async throws -> T) async throws -> T {
        let client = try options.client()
        do {
            let result = try await body(client)
            try? await client.http.shutdown()
            return result
        } catch {
            try? await client.http.shutdown()
            throw error
        }
    }

    enum Method: String {
        case GET, POST, PATCH, DELETE
    }

    // MARK: paths

    /// `/v1/projects/{p}[/tenants/{t}]` (accounts) or `/v2/…` (configuration and Tessera's resources).
    func path(_ version: String, _ scope: Scope, _ rest: String) -> String {
        var path = "/\(version)/projects/\(Self.segment(projectID))"
        if let tenant = scope.tenantID { path += "/tenants/\(Self.segment(tenant))" }
        return path + rest
    }

    static func segment(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    static func queryString(_ query: [(String, String)]) -> String {
        guard !query.isEmpty else { return "" }
        return "?"
            + query.map { "\(segment($0.0))=\(segment($0.1))" }.joined(separator: "&")
    }

    // MARK: calls

    /// One call; the answer's JSON, or a `CLIError` with the exit status its failure maps to.
    func call(_ method: Method, _ path: String, query: [(String, String)] = [], body: JSONValue? = nil)
        async throws -> JSONValue
    {
        let url = baseURL + path + Self.queryString(query)
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method.rawValue)
        request.headers.add(name: "Authorization", value: authorization)
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "tessera-cli/\(TesseraVersion.current)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSON.compactData(body)))
        }
        let status: Int
        let data: Data
        do {
            let response = try await http.execute(
                request, timeout: .milliseconds(Int64(timeout.timeInterval * 1000)))
            status = Int(response.status.code)
            let buffer = try await response.body.collect(upTo: 1 << 30)
            data = Data(buffer.readableBytesView)
            if (300..<400).contains(status) {
                let location = response.headers.first(name: "Location") ?? "elsewhere"
                throw CLIError(
                    "REDIRECTED", "\(baseURL) redirects to \(location): give the final URL as --admin-url")
            }
        } catch let error as CLIError {
            throw error
        } catch {
            throw Self.unreachable(baseURL, error, timeout: timeout)
        }
        guard (200..<300).contains(status) else {
            throw CLIError.server(status: status, body: data, url: baseURL)
        }
        if data.isEmpty { return .object([:]) }
        do {
            return try JSON.decode(data)
        } catch {
            throw CLIError(
                "INVALID_RESPONSE",
                "\(baseURL) answered HTTP \(status) with something that is not JSON: is it Tessera's admin plane?")
        }
    }

    static func unreachable(_ url: String, _ error: any Error, timeout: Duration) -> CLIError {
        let text = String(describing: error)
        let lowered = text.lowercased()
        let why: String
        if lowered.contains("refused") {
            why = "connection refused"
        } else if lowered.contains("timeout") || lowered.contains("deadline") || lowered.contains("timed out") {
            why = "no answer within \(Format.duration(timeout.timeInterval))"
        } else if lowered.contains("resolve") || lowered.contains("lookup") || lowered.contains("name or service") {
            why = "host not found"
        } else {
            why = text
        }
        return CLIError(
            "UNAVAILABLE", "cannot reach the admin plane at \(url) (\(why)); check --admin-url or TESSERA_ADMIN_URL",
            status: .unavailable)
    }

    // MARK: paging

    /// Every item of a `pageSize`/`pageToken` list (docs/protocol/admin.md#tesseras-own-admin-resources,
    /// #admin-endpoints), page after page, at most `limit`.
    func list(
        _ path: String, items: String, pageSize: Int = 1000, limit: Int? = nil, query: [(String, String)] = []
    ) async throws -> [JSONValue] {
        var all: [JSONValue] = []
        var token: String?
        repeat {
            var parameters = query + [("pageSize", String(pageSize))]
            if let token { parameters.append(("pageToken", token)) }
            let page = try await call(.GET, path, query: parameters)
            let rows = page[items]?.arrayValue ?? []
            all += rows
            token = page["nextPageToken"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            if let limit, all.count >= limit { return Array(all.prefix(limit)) }
        } while token != nil
        return all
    }
}
