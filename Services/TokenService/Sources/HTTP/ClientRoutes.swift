import Foundation
import HTTPTypes
import Hummingbird
import TesseraShared

/// The legacy Gitkit v3 API that the Apple and Android SDKs call for nearly everything
/// (docs/protocol/README.md#the-surface, docs/protocol/accounts.md#legacy-v3-paths). Each
/// rpc stands for one operation and is served by that operation's own handler, with its behaviour, errors,
/// rate limits and audit: this is the one table of them.
enum LegacyV3 {
    /// With the Google host prefix (what the SDKs build in emulator mode) and bare.
    static let prefixes = ["/www.googleapis.com/identitytoolkit/v3/relyingparty", "/identitytoolkit/v3/relyingparty"]

    /// v3 rpc → the operation it stands for: a v1 path as the token service registers it (without a
    /// prefix), or `v3:` for the few that exist only on v3.
    static let operations: [String: String] = [
        "signupNewUser": "v1/accounts:signUp",
        "verifyPassword": "v1/accounts:signInWithPassword",
        "getAccountInfo": "v1/accounts:lookup",
        "setAccountInfo": "v1/accounts:update",
        "deleteAccount": "v1/accounts:delete",
        "verifyAssertion": "v1/accounts:signInWithIdp",
        "verifyCustomToken": "v1/accounts:signInWithCustomToken",
        "getOobConfirmationCode": "v1/accounts:sendOobCode",
        "resetPassword": "v1/accounts:resetPassword",
        "createAuthUri": "v1/accounts:createAuthUri",
        "emailLinkSignin": "v1/accounts:signInWithEmailLink",
        "sendVerificationCode": "v1/accounts:sendVerificationCode",
        "verifyPhoneNumber": "v1/accounts:signInWithPhoneNumber",
        "getProjectConfig": "v1/projects",
        "getRecaptchaParam": "v1/recaptchaParams",
        // The session-cookie keys as a kid → certificate map (docs/protocol/tokens.md#public-keys).
        "publicKeys": "v3:publicKeys",
        // Admin export and import with the project in the body (docs/protocol/accounts.md#legacy-v3-paths).
        "downloadAccount": "v3:downloadAccount",
        "uploadAccount": "v3:uploadAccount",
    ]

    /// rpcs of features out of scope (docs/protocol/README.md#the-surface): 501 with their name, whatever the method.
    static let outOfScope = [
        "signOutUser", "verifyClient", "signInWithGameCenter",
        "setProjectConfig",
    ]

    /// The v3 rpcs that stand for `operation`.
    static func rpcs(for operation: String) -> [String] {
        operations.filter { $0.value == operation }.map(\.key).sorted()
    }
}

extension RouterGroup<TokenContext> {
    /// An end-user operation: its handler gets a `ClientContext` (the API key was checked). Called on
    /// the group that reads the caller (`CallerMiddleware`), which only client routes pay for.
    func client<Output: ResponseGenerator>(
        _ method: HTTPRequest.Method, _ operation: String,
        use handler: @escaping @Sendable (Request, ClientContext) async throws -> Output
    ) {
        group(context: ClientContext.self).register(method, operation, use: handler)
    }

    /// An operation end users and admins share: its handler gets a `ClientOrAdminContext`.
    func client<Output: ResponseGenerator>(
        _ method: HTTPRequest.Method, _ operation: String,
        use handler: @escaping @Sendable (Request, ClientOrAdminContext) async throws -> Output
    ) {
        group(context: ClientOrAdminContext.self).register(method, operation, use: handler)
    }
}

extension RouterMethods {
    /// Registers a client operation (`v1/accounts:signUp`, `v2/passwordPolicy`, …) under every path that
    /// stands for it: bare and with the identitytoolkit host prefix (docs/protocol/README.md#the-surface),
    /// and the v3 rpcs the legacy table maps to it, with and without their host prefix. One handler for all
    /// of them.
    func register<Output: ResponseGenerator>(
        _ method: HTTPRequest.Method, _ operation: String,
        use handler: @escaping @Sendable (Request, Context) async throws -> Output
    ) {
        if !operation.hasPrefix("v3:") {
            for prefix in identityToolkitPrefixes {
                on(RouterPath("\(prefix)/\(operation)"), method: method, use: handler)
            }
        }
        for rpc in LegacyV3.rpcs(for: operation) {
            for prefix in LegacyV3.prefixes {
                on(RouterPath("\(prefix)/\(rpc)"), method: method, use: handler)
            }
        }
    }

    /// The out-of-scope v3 rpcs answer 501 with their name; any other unknown v3 path is a 404.
    func addLegacyOutOfScope() {
        for rpc in LegacyV3.outOfScope {
            for prefix in LegacyV3.prefixes {
                for method in [HTTPRequest.Method.post, .get] {
                    on(RouterPath("\(prefix)/\(rpc)"), method: method) { _, _ -> Response in
                        throw FirebaseError.notImplemented(rpc)
                    }
                }
            }
        }
    }
}

/// v3 `downloadAccount` / `uploadAccount` (docs/protocol/accounts.md#legacy-v3-paths): the Admin export and
/// import with the project named by the body's `targetProjectId`, which only an authenticated admin may give.
/// Forwarded to the directory's `accounts:batchGet` / `accounts:batchCreate`, which authenticate and audit
/// them.
struct LegacyAdminController {
    let tokens: SessionTokens
    let configuration: TokenServiceConfiguration

    func addRoutes(to router: Router<TokenContext>) {
        router.register(.post, "v3:downloadAccount", use: download)
        router.register(.post, "v3:uploadAccount", use: upload)
    }

    struct Target: Decodable {
        var targetProjectId: String?
        var tenantId: String?
        var maxResults: JSONValue?
        var nextPageToken: String?
    }

    @Sendable func download(_ request: Request, context: TokenContext) async throws -> Response {
        try await forward(request, context: context, verb: "batchGet")
    }

    @Sendable func upload(_ request: Request, context: TokenContext) async throws -> Response {
        try await forward(request, context: context, verb: "batchCreate")
    }

    func forward(_ request: Request, context: TokenContext, verb: String) async throws -> Response {
        guard let authorization = request.bearerToken.map({ "Bearer \($0)" }) else {
            throw FirebaseError.invalid(
                .insufficientPermission, "Only authenticated requests can specify target_project_id.")
        }
        var request = request
        let data: Data
        do {
            data = Data(try await request.collectBody(upTo: 32 << 20).readableBytesView)
        } catch {
            throw FirebaseError.payloadTooLarge
        }
        let target = try JSONBody.decode(Target.self, from: data.isEmpty ? Data("{}".utf8) : data)
        guard let project = target.targetProjectId, !project.isEmpty else {
            throw FirebaseError.invalid(
                .insufficientPermission, "Only authenticated requests can specify target_project_id.")
        }
        let scope = Scope(wire: target.tenantId)
        guard verb == "batchGet" else {
            return try await tokens.relayAdminCall(
                project: project, scope: scope, verb: verb, authorization: authorization, body: data,
                request: request, context: context)
        }
        // The export is a GET with the paging fields in the query.
        var query: [String] = []
        switch target.maxResults {
        case .int(let value)?: query.append("maxResults=\(value)")
        case .string(let text)? where Int(text) != nil: query.append("maxResults=\(text)")
        case nil, .null?: break
        default: throw FirebaseError.invalidArgument("Invalid value at 'max_results'")
        }
        if let token = target.nextPageToken, !token.isEmpty,
            let encoded = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "_", "."]))
        {
            query.append("nextPageToken=\(encoded)")
        }
        return try await tokens.relayAdminCall(
            method: .get, project: project, scope: scope, verb: verb,
            query: query.isEmpty ? nil : query.joined(separator: "&"), authorization: authorization, body: nil,
            request: request, context: context)
    }
}
