import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

/// `POST /v1/projects/{p}[/tenants/{t}]:createSessionCookie` (docs/protocol/tokens.md#token-rules,
/// docs/protocol/admin.md#admin-endpoints, docs/protocol/tokens.md#session-cookies): an admin exchanges a
/// user's ID token for a session cookie, an RS256 JWT with the ID token's claims, the session issuer, and a
/// lifetime of 5 minutes to 14 days. Signed with session cookies' own key set (issue #23), as Firebase does:
/// a session cookie never passes for an ID token, nor the reverse.
struct SessionCookieController {
    let tokens: SessionTokens
    let cookieKeys: KeyStore
    let configuration: TokenServiceConfiguration

    static let minimum: Int64 = 300
    static let maximum: Int64 = 14 * 86400

    func addRoutes(to router: Router<TokenContext>) {
        for prefix in identityToolkitPrefixes {
            router.post("\(prefix)/v1/projects/{project}:createSessionCookie", use: create)
            router.post("\(prefix)/v1/projects/{project}/tenants/{tenant}:createSessionCookie", use: create)
        }
    }

    struct CreateRequest: Decodable {
        var idToken: String?
        var validDuration: JSONValue?
        var tenantId: String?
    }

    struct CreateResponse: Encodable, Sendable {
        var sessionCookie: String
    }

    @Sendable func create(_ request: Request, context: TokenContext) async throws -> JSONResponse<CreateResponse> {
        guard let authorization = request.bearerToken.map({ "Bearer \($0)" }) else {
            throw FirebaseError.missingCredentials
        }
        let body = try await request.decodeJSON(CreateRequest.self, context: context)
        let requested = Scope(wire: context.parameters.get("tenant") ?? body.tenantId)
        _ = try await tokens.directory.call(
            InternalEndpoints.checkAdmin,
            CheckAdminRequest(
                authorization: authorization, scope: requested, clientIP: tokens.clientIP(request, context)),
            requestID: context.requestID, logger: context.logger)
        if let project = context.parameters.get("project"), project != configuration.projectID {
            throw FirebaseError.invalid(.projectNotFound)
        }
        let duration: Int64
        switch body.validDuration {
        case nil: duration = Self.maximum
        case .int(let seconds)?: duration = seconds
        case .string(let text)?:
            guard let seconds = Int64(text) else { throw FirebaseError.invalid(.invalidDuration) }
            duration = seconds
        default: throw FirebaseError.invalid(.invalidDuration)
        }
        guard (Self.minimum...Self.maximum).contains(duration) else { throw FirebaseError.invalid(.invalidDuration) }
        let (verified, user) = try await tokens.verify(
            idToken: body.idToken, requested: requested, requestID: context.requestID,
            logger: context.logger)
        let now = Int64(Date().timeIntervalSince1970)
        var claims = tokens.issuer.claims(
            user: user,
            session: SessionInfo(
                familyId: "", signInProvider: verified.signInProvider, authTime: verified.authTime, tokenIssuedAt: now))
        claims["iss"] = .string(tokens.issuer.sessionIssuer)
        claims["exp"] = .int(now + duration)
        let cookie = try tokens.issuer.sign(claims, keys: cookieKeys)
        tokens.issuer.countIssued("session_cookie", provider: verified.signInProvider)
        context.logger.info("session cookie created", metadata: ["user.id": .string(user.localId)])
        return JSONResponse(CreateResponse(sessionCookie: cookie))
    }
}
