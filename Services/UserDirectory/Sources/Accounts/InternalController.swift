import Foundation
import Hummingbird
import Logging
import TesseraShared

/// The internal API for the token service and the cleanup worker (see `InternalPath`).
struct InternalController {
    let accounts: Accounts
    let schemaVersion: Int

    func addRoutes(to group: RouterGroup<DirectoryInternalContext>) {
        group.get(RouterPath(InternalPath.status)) { _, _ in
            JSONResponse(DirectoryStatus(service: "user-directory", schemaVersion: schemaVersion))
        }
        group.post(RouterPath(InternalPath.signUpAnonymous), use: signUpAnonymous)
        group.post(RouterPath(InternalPath.getAccount), use: getAccount)
        group.post(RouterPath(InternalPath.deleteAccount), use: deleteAccount)
        group.post(RouterPath(InternalPath.rotateRefreshToken), use: rotate)
        group.post(RouterPath(InternalPath.signUpPassword), use: signUpPassword)
        group.post(RouterPath(InternalPath.signInWithPassword), use: signInWithPassword)
        group.post(RouterPath(InternalPath.authMethods), use: authMethods)
        group.post(RouterPath(InternalPath.updateAccount), use: updateAccount)
        group.post(RouterPath(InternalPath.checkScope)) { request, context in
            let body = try await request.decodeJSON(CheckScopeRequest.self, context: context)
            // PROJECT_DISABLED and TENANT_NOT_FOUND come from reading the switches.
            let flags = try await ScopeFlags.read(accounts.passwords.client, scope: body.scope, logger: context.logger)
            switch body.method {
            case .password where !flags.allowPasswordSignup: throw FirebaseError.invalid(.passwordLoginDisabled)
            case .emailLink where !flags.enableEmailLinkSignin: throw FirebaseError.invalid(.operationNotAllowed)
            default: return JSONResponse(EmptyObject())
            }
        }
        group.post(RouterPath(InternalPath.sendOobCode)) { request, context in
            let body = try await request.decodeJSON(SendOobCodeRequest.self, context: context)
            return JSONResponse(try await accounts.oob.sendOobCode(body, logger: context.logger))
        }
        group.post(RouterPath(InternalPath.resetPassword)) { request, context in
            let body = try await request.decodeJSON(ResetPasswordRequest.self, context: context)
            return JSONResponse(try await accounts.oob.resetPassword(body, logger: context.logger))
        }
        group.post(RouterPath(InternalPath.idpConfig)) { request, context in
            let body = try await request.decodeJSON(IdpConfigRequest.self, context: context)
            return JSONResponse(try await accounts.federated.idpConfig(body, logger: context.logger))
        }
        group.post(RouterPath(InternalPath.signInWithIdp)) { request, context in
            let body = try await request.decodeJSON(SignInWithIdpRequest.self, context: context)
            let answer = try await accounts.federated.signInWithIdp(body, logger: context.logger)
            context.logger.info(
                "federated sign-in",
                metadata: [
                    "tenant.id": .string(body.scope.key),
                    "provider.id": .string(body.identity.providerId),
                    "outcome": .string(answer.outcome.rawValue), "user.new": .stringConvertible(answer.isNewUser),
                    "user.id": .string(answer.user?.localId ?? "-"), "link": .stringConvertible(body.linkTo != nil),
                ])
            return JSONResponse(answer)
        }
        group.post(RouterPath(InternalPath.signInWithCustomToken)) { request, context in
            let body = try await request.decodeJSON(SignInWithCustomTokenRequest.self, context: context)
            let answer = try await accounts.customTokens.signInWithCustomToken(body, logger: context.logger)
            context.logger.info(
                "custom-token sign-in",
                metadata: [
                    "tenant.id": .string(body.scope.key), "user.id": .string(answer.user.localId),
                    "user.new": .stringConvertible(answer.isNewUser),
                ])
            return JSONResponse(answer)
        }
        group.post(RouterPath(InternalPath.signInWithEmailLink)) { request, context in
            let body = try await request.decodeJSON(SignInWithEmailLinkRequest.self, context: context)
            let answer = try await accounts.emailLinks.signInWithEmailLink(body, logger: context.logger)
            context.logger.info(
                "email-link sign-in",
                metadata: [
                    "tenant.id": .string(body.scope.key), "user.id": .string(answer.user.localId),
                    "user.new": .stringConvertible(answer.isNewUser), "link": .stringConvertible(body.linkTo != nil),
                ])
            return JSONResponse(answer)
        }
        group.post(RouterPath(InternalPath.applyOobCode)) { request, context in
            let body = try await request.decodeJSON(ApplyOobCodeRequest.self, context: context)
            return JSONResponse(try await accounts.oob.applyOobCode(body, logger: context.logger))
        }
    }

    @Sendable func signUpPassword(_ request: Request, context: DirectoryInternalContext) async throws
        -> JSONResponse<SessionCreatedResponse>
    {
        let body = try await request.decodeJSON(SignUpPasswordRequest.self, context: context)
        let (user, session) = try await accounts.passwords.signUpPassword(body, logger: context.logger)
        context.logger.info(
            body.localId == nil ? "password user created" : "password linked to user",
            metadata: ["tenant.id": .string(body.scope.key), "user.id": .string(user.localId)])
        return JSONResponse(SessionCreatedResponse(user: user, session: session))
    }

    @Sendable func signInWithPassword(_ request: Request, context: DirectoryInternalContext) async throws
        -> JSONResponse<SessionCreatedResponse>
    {
        let body = try await request.decodeJSON(SignInWithPasswordRequest.self, context: context)
        let (user, session) = try await accounts.passwords.signInWithPassword(body, logger: context.logger)
        return JSONResponse(SessionCreatedResponse(user: user, session: session))
    }

    @Sendable func authMethods(_ request: Request, context: DirectoryInternalContext) async throws
        -> JSONResponse<AuthMethodsResponse>
    {
        let body = try await request.decodeJSON(AuthMethodsRequest.self, context: context)
        return JSONResponse(try await accounts.passwords.authMethods(body, logger: context.logger))
    }

    @Sendable func updateAccount(_ request: Request, context: DirectoryInternalContext) async throws
        -> JSONResponse<UpdateAccountResponse>
    {
        let body = try await request.decodeJSON(UpdateAccountRequest.self, context: context)
        let answer = try await accounts.passwords.updateAccount(body, logger: context.logger)
        context.logger.info(
            "user updated itself",
            metadata: [
                "tenant.id": .string(body.scope.key), "user.id": .string(body.localId),
                "credentials.changed": .stringConvertible(answer.session != nil),
            ])
        return JSONResponse(answer)
    }

    @Sendable func signUpAnonymous(_ request: Request, context: DirectoryInternalContext) async throws
        -> JSONResponse<SessionCreatedResponse>
    {
        let body = try await request.decodeJSON(SignUpAnonymousRequest.self, context: context)
        let (user, session) = try await accounts.sessions.signUpAnonymous(
            scope: body.scope, refreshTokenHash: body.refreshTokenHash,
            sessionExpiresAt: body.sessionExpiresAt, clientIP: body.clientIP, logger: context.logger)
        context.logger.info(
            "anonymous user created",
            metadata: ["tenant.id": .string(body.scope.key), "user.id": .string(user.localId)])
        return JSONResponse(SessionCreatedResponse(user: user, session: session))
    }

    @Sendable func getAccount(_ request: Request, context: DirectoryInternalContext) async throws -> JSONResponse<
        AccountResponse
    > {
        let body = try await request.decodeJSON(AccountRequest.self, context: context)
        let (user, credentialSeq) = try await accounts.sessions.userAndCredentialSeq(
            scope: body.scope, localId: body.localId, logger: context.logger)
        // Only a token of the second `validSince` names needs its session looked at (older ones are
        // refused and later ones stand by the second alone), and only when something ever revoked
        // the user's sessions: a user as signed up has `credential_seq` 0 and nothing to look at.
        guard let session = body.session, body.issuedAt == user.validSince, credentialSeq > 0 else {
            return JSONResponse(AccountResponse(user: user))
        }
        let ended = try await accounts.sessions.sessionEnded(
            scope: body.scope, localId: body.localId, familyId: session, logger: context.logger)
        return JSONResponse(AccountResponse(user: user, sessionEnded: ended))
    }

    @Sendable func deleteAccount(_ request: Request, context: DirectoryInternalContext) async throws -> JSONResponse<
        EmptyObject
    > {
        let body = try await request.decodeJSON(AccountRequest.self, context: context)
        try await accounts.sessions.deleteByUser(
            scope: body.scope, localId: body.localId, logger: context.logger)
        context.logger.info(
            "user deleted itself",
            metadata: ["tenant.id": .string(body.scope.key), "user.id": .string(body.localId)])
        return JSONResponse(EmptyObject())
    }

    @Sendable func rotate(_ request: Request, context: DirectoryInternalContext) async throws
        -> JSONResponse<RotateRefreshTokenResponse>
    {
        let body = try await request.decodeJSON(RotateRefreshTokenRequest.self, context: context)
        return JSONResponse(try await accounts.sessions.rotateRefreshToken(body, logger: context.logger))
    }
}
