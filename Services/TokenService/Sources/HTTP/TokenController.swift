import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

/// `POST /v1/token` (securetoken, docs/protocol/tokens.md#the-secure-token-api): the refresh grant, with form
/// or JSON bodies.
struct TokenController {
    let tokens: SessionTokens
    let configuration: TokenServiceConfiguration

    func addRoutes(to clients: RouterGroup<TokenContext>) {
        let endUsers = clients.group(context: ClientContext.self)
        for prefix in secureTokenPrefixes {
            endUsers.post("\(prefix)/v1/token", use: token)
        }
    }

    struct GrantRequest: Decodable {
        var grantType: String?
        var refreshToken: String?
    }

    struct GrantResponse: Encodable, Sendable {
        var access_token: String
        var expires_in = String(IDTokenIssuer.lifetime)
        var token_type = "Bearer"
        var refresh_token: String
        var id_token: String
        var user_id: String
        var project_id: String
    }

    @Sendable func token(_ request: Request, context: ClientContext) async throws -> JSONResponse<GrantResponse> {
        let grant = try await Self.decodeGrant(request, context: context)
        guard let grantType = grant.grantType, !grantType.isEmpty else {
            throw FirebaseError.invalid(.missingGrantType)
        }
        guard grantType == "refresh_token" else { throw FirebaseError.invalid(.invalidGrantType) }
        guard let refreshToken = grant.refreshToken, !refreshToken.isEmpty else {
            throw FirebaseError.invalid(.missingRefreshToken)
        }
        let issued = try await tokens.refresh(refreshToken, requestID: context.requestID, logger: context.logger)
        return JSONResponse(
            GrantResponse(
                access_token: issued.idToken, refresh_token: issued.refreshToken, id_token: issued.idToken,
                user_id: issued.user.localId, project_id: configuration.projectNumber),
            headers: [.cacheControl: "no-store"])
    }

    /// `application/x-www-form-urlencoded` or JSON, snake_case or camelCase.
    static func decodeGrant(_ request: Request, context: some TesseraContext) async throws -> GrantRequest {
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        guard contentType.hasPrefix("application/x-www-form-urlencoded") else {
            return try await request.decodeJSON(GrantRequest.self, context: context)
        }
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: 64 << 10)
        } catch {
            throw FirebaseError.payloadTooLarge
        }
        guard let fields = FormURLEncoded.parse(String(buffer: buffer)) else {
            throw FirebaseError.invalidArgument("The request body is not valid application/x-www-form-urlencoded text.")
        }
        return GrantRequest(
            grantType: fields["grant_type"] ?? fields["grantType"],
            refreshToken: fields["refresh_token"] ?? fields["refreshToken"])
    }
}
