import Foundation
import HTTPTypes
import Hummingbird
import TesseraShared

/// What the token service's contexts share: the request id and the peer's address.
protocol TokenRequestContext: TesseraContext {
    /// The peer's address (the ingress, behind one); see `ClientAddress` for the end user's.
    var remoteAddress: String? { get }
}

/// The token service's request context. `CallerMiddleware` reads what the request presents once —
/// its API key, checked, and its bearer — and the routes build their context from it (issue #24).
struct TokenContext: TokenRequestContext, InternalCallerContext {
    var coreContext: CoreRequestContextStorage
    var requestID: String
    var isInternalCaller = false
    var remoteAddress: String?
    /// The API key's verdict (nil before `CallerMiddleware`).
    var apiKey: Result<Void, FirebaseError>?
    /// The token of `Authorization: Bearer` (nil: none, or another scheme).
    var bearer: String?

    init(source: Source) {
        coreContext = .init(source: source)
        requestID = ""
        remoteAddress = source.channel.remoteAddress?.ipAddress
    }
}

/// Reads who is calling, once per request, for the client contexts.
struct CallerMiddleware: RouterMiddleware {
    typealias Context = TokenContext
    let apiKey: String

    func handle(_ request: Request, context: TokenContext, next: (Request, TokenContext) async throws -> Response)
        async throws -> Response
    {
        var context = context
        context.apiKey = Result { try Caller.checkAPIKey(request, apiKey: apiKey) }.mapError {
            $0 as? FirebaseError ?? .internal
        }
        context.bearer = request.bearerToken
        return try await next(request, context)
    }
}

/// An end-user operation's context (docs/protocol/README.md#transport-conventions): only built when the API
/// key was valid, so a handler that takes one never checks it.
struct ClientContext: ChildRequestContext, TokenRequestContext {
    var coreContext: CoreRequestContextStorage
    var requestID: String
    var remoteAddress: String?

    init(context: TokenContext) throws {
        try (context.apiKey ?? .failure(.missingAPIKey)).get()
        coreContext = context.coreContext
        requestID = context.requestID
        remoteAddress = context.remoteAddress
    }
}

/// The context of an operation that an end user (API key) or an admin (a bearer, which the
/// directory authenticates) may call (docs/protocol/README.md#transport-conventions): `caller` says which.
struct ClientOrAdminContext: ChildRequestContext, TokenRequestContext {
    var coreContext: CoreRequestContextStorage
    var requestID: String
    var remoteAddress: String?
    let caller: Caller

    init(context: TokenContext) throws {
        if let bearer = context.bearer {
            caller = .privileged(authorization: "Bearer \(bearer)")
        } else {
            try (context.apiKey ?? .failure(.missingAPIKey)).get()
            caller = .client
        }
        coreContext = context.coreContext
        requestID = context.requestID
        remoteAddress = context.remoteAddress
    }
}

/// Who is calling a client endpoint: an end user's app (API key) or an admin (`Authorization: Bearer`), whose
/// call the directory authenticates (docs/protocol/README.md#transport-conventions: either is accepted).
enum Caller: Sendable {
    case client
    case privileged(authorization: String)

    static func checkAPIKey(_ request: Request, apiKey: String) throws {
        let presented = request.uri.queryParameters.get("key") ?? request.headers[.googAPIKey]
        guard let presented, !presented.isEmpty else { throw FirebaseError.missingAPIKey }
        guard Secrets.constantTimeEquals(presented, apiKey) else { throw FirebaseError.invalidAPIKey }
    }
}

/// Both path forms of the token and key routes (docs/protocol/README.md#the-surface);
/// `identityToolkitPrefixes` is Shared's.
let secureTokenPrefixes = ["", "/securetoken.googleapis.com"]
let googleAPIsPrefixes = ["", "/www.googleapis.com"]

extension Request {
    /// An end user's JSON body: `targetProjectId` names a project for the call, which only an admin may do
    /// (docs/protocol/README.md#transport-conventions); with an API key alone it is refused, as Google
    /// refuses it. (These overloads are chosen over Shared's generic one for the client contexts.)
    func decodeJSON<T: Decodable>(_ type: T.Type, context: ClientContext, limit: Int = 1 << 20) async throws -> T {
        let data = try await jsonData(limit: limit)
        try Self.refuseTargetProject(in: data)
        return try JSONBody.decode(type, from: data)
    }

    func decodeJSON<T: Decodable>(_ type: T.Type, context: ClientOrAdminContext, limit: Int = 1 << 20)
        async throws -> T
    {
        let data = try await jsonData(limit: limit)
        if case .client = context.caller { try Self.refuseTargetProject(in: data) }
        return try JSONBody.decode(type, from: data)
    }

    static func refuseTargetProject(in data: Data) throws {
        // Parsed only when the name occurs at all: the hot paths pay a byte search.
        guard data.firstRange(of: Data("arget".utf8)) != nil else { return }
        let members = try? JSONDecoder().decode([String: JSONValue].self, from: data)
        guard members?["targetProjectId"] != nil || members?["target_project_id"] != nil else { return }
        throw FirebaseError.invalid(
            .insufficientPermission, "Only authenticated requests can specify target_project_id.")
    }
}
