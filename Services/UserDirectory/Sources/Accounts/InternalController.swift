import Foundation
import Hummingbird
import Logging
import TesseraShared

/// The internal API for the token service and the cleanup worker (see `InternalPath`).
struct InternalController<Accounts: AccountRepository> {
    let accounts: Accounts
    let schemaVersion: Int

    func addRoutes(to group: RouterGroup<DirectoryContext>) {
        group.get(RouterPath(InternalPath.status)) { _, _ in
            JSONResponse(DirectoryStatus(service: "user-directory", schemaVersion: schemaVersion))
        }
        group.post(RouterPath(InternalPath.signUpAnonymous), use: signUpAnonymous)
        group.post(RouterPath(InternalPath.getAccount), use: getAccount)
        group.post(RouterPath(InternalPath.deleteAccount), use: deleteAccount)
        group.post(RouterPath(InternalPath.rotateRefreshToken), use: rotate)
    }

    @Sendable func signUpAnonymous(_ request: Request, context: DirectoryContext) async throws
        -> JSONResponse<SessionCreatedResponse>
    {
        let body = try await request.decodeJSON(SignUpAnonymousRequest.self, context: context)
        let (user, session) = try await accounts.signUpAnonymous(
            scope: scopeKey(body.tenantId), refreshTokenHash: body.refreshTokenHash,
            sessionExpiresAt: body.sessionExpiresAt, logger: context.logger)
        context.logger.info(
            "anonymous user created",
            metadata: ["tenant.id": .string(scopeKey(body.tenantId)), "user.id": .string(user.localId)])
        return JSONResponse(SessionCreatedResponse(user: user, session: session))
    }

    @Sendable func getAccount(_ request: Request, context: DirectoryContext) async throws -> JSONResponse<
        AccountResponse
    > {
        let body = try await request.decodeJSON(AccountRequest.self, context: context)
        let user = try await accounts.userForClient(
            scope: scopeKey(body.tenantId), localId: body.localId, logger: context.logger)
        return JSONResponse(AccountResponse(user: user))
    }

    @Sendable func deleteAccount(_ request: Request, context: DirectoryContext) async throws -> JSONResponse<
        EmptyObject
    > {
        let body = try await request.decodeJSON(AccountRequest.self, context: context)
        try await accounts.deleteByUser(scope: scopeKey(body.tenantId), localId: body.localId, logger: context.logger)
        context.logger.info(
            "user deleted itself",
            metadata: ["tenant.id": .string(scopeKey(body.tenantId)), "user.id": .string(body.localId)])
        return JSONResponse(EmptyObject())
    }

    @Sendable func rotate(_ request: Request, context: DirectoryContext) async throws
        -> JSONResponse<RotateRefreshTokenResponse>
    {
        let body = try await request.decodeJSON(RotateRefreshTokenRequest.self, context: context)
        return JSONResponse(try await accounts.rotateRefreshToken(body, logger: context.logger))
    }
}
