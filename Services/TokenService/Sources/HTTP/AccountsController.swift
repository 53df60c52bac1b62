import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

/// End-user `accounts:*` endpoints (API.md B.2.1). Privileged calls on these paths are forwarded
/// to the directory's admin API, which authenticates them.
struct AccountsController {
    let tokens: SessionTokens
    let configuration: TokenServiceConfiguration

    func addRoutes(to router: Router<TokenContext>) {
        for prefix in identityToolkitPrefixes {
            router.post("\(prefix)/v1/accounts:signUp", use: signUp)
            router.post("\(prefix)/v1/accounts:lookup", use: lookup)
            router.post("\(prefix)/v1/accounts:delete", use: delete)
        }
    }

    struct SignUpRequest: Decodable {
        var email: String?
        var password: String?
        var idToken: String?
        var tenantId: String?
        var localId: String?
    }

    struct SignUpResponse: Encodable, Sendable {
        var kind = Kind.signUp
        var localId: String
        var idToken: String
        var refreshToken: String
        var expiresIn = String(IDTokenIssuer.lifetime)
    }

    @Sendable func signUp(_ request: Request, context: TokenContext) async throws -> JSONResponse<SignUpResponse> {
        guard case .client = try Caller.identify(request, apiKey: configuration.apiKey) else {
            throw FirebaseError.notImplemented("Privileged accounts:signUp (use POST /v1/projects/{p}/accounts)")
        }
        let body = try await request.decodeJSON(SignUpRequest.self, context: context)
        if body.localId != nil { throw FirebaseError.invalid("UNEXPECTED_PARAMETER", "User ID") }
        guard body.email == nil, body.password == nil, body.idToken == nil else {
            throw FirebaseError.notImplemented("Email/password sign-up")
        }
        let issued = try await tokens.signUpAnonymous(
            tenantId: Self.tenant(body.tenantId), requestID: context.requestID, logger: context.logger)
        return JSONResponse(
            SignUpResponse(localId: issued.user.localId, idToken: issued.idToken, refreshToken: issued.refreshToken))
    }

    struct IDTokenRequest: Decodable {
        var idToken: String?
        var tenantId: String?
    }

    @Sendable func lookup(_ request: Request, context: TokenContext) async throws -> Response {
        if case .privileged(let authorization) = try Caller.identify(request, apiKey: configuration.apiKey) {
            return try await forwardPrivileged(request, context: context, authorization: authorization, verb: "lookup")
        }
        let body = try await request.decodeJSON(IDTokenRequest.self, context: context)
        let (_, user) = try await tokens.verify(
            idToken: body.idToken, requestedTenant: Self.tenant(body.tenantId), requestID: context.requestID,
            logger: context.logger)
        return try JSONResponse(LookupResponse(users: [user])).response(from: request, context: context)
    }

    @Sendable func delete(_ request: Request, context: TokenContext) async throws -> Response {
        if case .privileged(let authorization) = try Caller.identify(request, apiKey: configuration.apiKey) {
            return try await forwardPrivileged(request, context: context, authorization: authorization, verb: "delete")
        }
        let body = try await request.decodeJSON(IDTokenRequest.self, context: context)
        let (verified, user) = try await tokens.verify(
            idToken: body.idToken, requestedTenant: Self.tenant(body.tenantId), requestID: context.requestID,
            logger: context.logger)
        // Self-deletion needs a recent sign-in (A.3); anonymous users are exempt.
        let age = Int64(Date().timeIntervalSince1970) - verified.authTime
        if !user.isAnonymous, age > configuration.reauthWindow.wholeSeconds {
            throw FirebaseError.invalid("CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
        }
        _ = try await tokens.directory.call(
            InternalPath.deleteAccount, AccountRequest(tenantId: verified.tenantId, localId: user.localId),
            as: EmptyObject.self, requestID: context.requestID, logger: context.logger)
        return try JSONResponse(DeleteResponse()).response(from: request, context: context)
    }

    /// Sends a privileged call to the directory's admin path for the body's tenant.
    func forwardPrivileged(_ request: Request, context: TokenContext, authorization: String, verb: String) async throws
        -> Response
    {
        var request = request
        let body = try await request.collectBody(upTo: 1 << 20)
        let data = Data(body.readableBytesView)
        let tenant = (try? JSONBody.decode(IDTokenRequest.self, from: data.isEmpty ? Data("{}".utf8) : data))?.tenantId
        var path = "/v1/projects/\(configuration.projectID)"
        if let tenant = Self.tenant(tenant) {
            guard let encoded = tenant.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "_"]))
            else { throw FirebaseError.invalid("TENANT_NOT_FOUND") }
            path += "/tenants/\(encoded)"
        }
        path += "/accounts:\(verb)"
        let (status, answer) = try await tokens.directory.forward(
            pathAndQuery: path, authorization: authorization, body: data,
            requestID: context.requestID, logger: context.logger)
        return Response(
            status: HTTPResponse.Status(code: status),
            headers: [.contentType: "application/json; charset=UTF-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: answer)))
    }

    static func tenant(_ raw: String?) -> String? {
        guard let raw, !raw.isEmpty else { return nil }
        return raw
    }
}
