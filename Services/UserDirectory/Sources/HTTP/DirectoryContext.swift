import Foundation
import Hummingbird
import Logging
import TesseraShared

typealias DirectoryContext = TesseraRequestContext

/// Both path forms of every route (API.md A.1): bare, and with the Google host prefix.
let identityToolkitPrefixes = ["", "/identitytoolkit.googleapis.com"]

/// Admin calls carry `Authorization: Bearer <admin secret>`; other schemes count as absent (B.0).
/// Checks the path's project id too.
struct AdminAuthMiddleware: RouterMiddleware {
    typealias Context = DirectoryContext
    let adminToken: String
    let projectID: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let bearer = request.bearerToken else { throw FirebaseError.missingCredentials }
        guard Secrets.constantTimeEquals(bearer, adminToken) else {
            context.logger.notice("admin call with an unknown credential")
            throw FirebaseError.invalidCredentials
        }
        if let project = context.parameters.get("project"), project != projectID {
            throw FirebaseError.invalid("PROJECT_NOT_FOUND")
        }
        return try await next(request, context)
    }
}

/// Internal calls carry the shared internal secret in `X-Tessera-Internal`.
struct InternalAuthMiddleware: RouterMiddleware {
    typealias Context = DirectoryContext
    let secret: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let presented = request.headers[.internalSecret], Secrets.constantTimeEquals(presented, secret) else {
            context.logger.warning("internal call without a valid internal secret")
            throw FirebaseError.permissionDenied("PERMISSION_DENIED : internal API")
        }
        return try await next(request, context)
    }
}
