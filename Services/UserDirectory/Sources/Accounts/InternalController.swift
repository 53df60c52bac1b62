import Foundation
import Hummingbird
import Logging
import TesseraShared

/// The internal API for the token service and the cleanup worker (`InternalEndpoints`).
struct InternalController {
    let accounts: Accounts
    let schemaVersion: Int

    func addRoutes(to group: RouterGroup<DirectoryInternalContext>) {
        group.on(InternalEndpoints.status) { _ in
            DirectoryStatus(service: "user-directory", schemaVersion: schemaVersion)
        }
        group.on(InternalEndpoints.signUpAnonymous, use: signUpAnonymous)
        group.on(InternalEndpoints.getAccount, use: getAccount)
        group.on(InternalEndpoints.deleteAccount, use: deleteAccount)
        group.on(InternalEndpoints.rotateRefreshToken, use: rotate)
        group.on(InternalEndpoints.signUpPassword, use: signUpPassword)
        group.on(InternalEndpoints.signInWithPassword, use: signInWithPassword)
        group.on(InternalEndpoints.authMethods, use: authMethods)
        group.on(InternalEndpoints.updateAccount, use: updateAccount)
        group.on(InternalEndpoints.checkScope) { body, context in
            // PROJECT_DISABLED and TENANT_NOT_FOUND come from reading the switches.
            let flags = try await ScopeFlags.read(accounts.passwords.client, scope: body.scope, logger: context.logger)
            switch body.method {
            case .password where !flags.allowPasswordSignup: throw FirebaseError.invalid(.passwordLoginDisabled)
            case .emailLink where !flags.enableEmailLinkSignin: throw FirebaseError.invalid(.operationNotAllowed)
            default: return EmptyObject()
            }
        }
        group.on(InternalEndpoints.sendOobCode) { body, context in
            try await accounts.oob.sendOobCode(body, logger: context.logger)
        }
        group.on(InternalEndpoints.resetPassword) { body, context in
            try await accounts.oob.resetPassword(body, logger: context.logger)
        }
        group.on(InternalEndpoints.idpConfig) { body, context in
            try await accounts.federated.idpConfig(body, logger: context.logger)
        }
        group.on(InternalEndpoints.signInWithIdp) { body, context in
            let answer = try await accounts.federated.signInWithIdp(body, logger: context.logger)
            context.logger.info(
                "federated sign-in",
                metadata: [
                    "tenant.id": .string(body.scope.key),
                    "provider.id": .string(body.identity.providerId),
                    "outcome": .string(answer.outcome.rawValue), "user.new": .stringConvertible(answer.isNewUser),
                    "user.id": .string(answer.user?.localId ?? "-"), "link": .stringConvertible(body.linkTo != nil),
                ])
            return answer
        }
        group.on(InternalEndpoints.signInWithCustomToken) { body, context in
            let answer = try await accounts.customTokens.signInWithCustomToken(body, logger: context.logger)
            context.logger.info(
                "custom-token sign-in",
                metadata: [
                    "tenant.id": .string(body.scope.key), "user.id": .string(answer.user.localId),
                    "user.new": .stringConvertible(answer.isNewUser),
                ])
            return answer
        }
        group.on(InternalEndpoints.signInWithEmailLink) { body, context in
            let answer = try await accounts.emailLinks.signInWithEmailLink(body, logger: context.logger)
            context.logger.info(
                "email-link sign-in",
                metadata: [
                    "tenant.id": .string(body.scope.key), "user.id": .string(answer.user.localId),
                    "user.new": .stringConvertible(answer.isNewUser), "link": .stringConvertible(body.linkTo != nil),
                ])
            return answer
        }
        group.on(InternalEndpoints.applyOobCode) { body, context in
            try await accounts.oob.applyOobCode(body, logger: context.logger)
        }
        addMultiFactorRoutes(to: group)
        group.on(InternalEndpoints.sendPhoneCode) { body, context in
            try await accounts.phone.sendCode(body, logger: context.logger)
        }
        group.on(InternalEndpoints.signInWithPhoneNumber) { body, context in
            let answer = try await accounts.phone.signIn(body, logger: context.logger)
            context.logger.info(
                "phone sign-in",
                metadata: [
                    "tenant.id": .string(body.scope.key), "user.id": .string(answer.user.localId),
                    "user.new": .stringConvertible(answer.isNewUser), "link": .stringConvertible(body.linkTo != nil),
                ])
            return answer
        }
    }

    /// Second factors (docs/protocol/mfa.md).
    func addMultiFactorRoutes(to group: RouterGroup<DirectoryInternalContext>) {
        group.on(InternalEndpoints.startTOTPEnrollment) { body, context in
            try await accounts.multiFactor.startTOTP(body, logger: context.logger)
        }
        group.on(InternalEndpoints.finalizeTOTPEnrollment) { body, context in
            let (user, session) = try await accounts.multiFactor.finalizeTOTP(body, logger: context.logger)
            context.logger.info(
                "second factor enrolled",
                metadata: [
                    "tenant.id": .string(body.scope.key), "user.id": .string(body.localId), "mfa.factor": "totp",
                    "mfa.enrollment": .string(session.secondFactorId ?? "-"),
                ])
            return SessionCreatedResponse(user: user, session: session)
        }
        group.on(InternalEndpoints.withdrawMFA) { body, context in
            let (user, session) = try await accounts.multiFactor.withdraw(body, logger: context.logger)
            context.logger.info(
                "second factor withdrawn",
                metadata: [
                    "tenant.id": .string(body.scope.key), "user.id": .string(body.localId),
                    "mfa.enrollment": .string(body.mfaEnrollmentId),
                ])
            return SessionCreatedResponse(user: user, session: session)
        }
        group.on(InternalEndpoints.finalizeMFASignIn) { body, context in
            let (user, session) = try await accounts.multiFactor.finalizeSignIn(body, logger: context.logger)
            context.logger.info(
                "second factor sign-in",
                metadata: [
                    "tenant.id": .string(body.scope.key), "user.id": .string(user.localId),
                    "mfa.factor": .string(session.secondFactor ?? "-"),
                ])
            return SessionCreatedResponse(user: user, session: session)
        }
        group.on(InternalEndpoints.startPhoneEnrollment) { body, context in
            try await accounts.phone.startEnrollment(body, logger: context.logger)
        }
        group.on(InternalEndpoints.finalizePhoneEnrollment) { body, context in
            let (user, session) = try await accounts.phone.finalizeEnrollment(body, logger: context.logger)
            context.logger.info(
                "second factor enrolled",
                metadata: [
                    "tenant.id": .string(body.scope.key), "user.id": .string(body.localId), "mfa.factor": "phone",
                    "mfa.enrollment": .string(session.secondFactorId ?? "-"),
                ])
            return SessionCreatedResponse(user: user, session: session)
        }
        group.on(InternalEndpoints.startPhoneMFASignIn) { body, context in
            try await accounts.phone.startSignIn(body, logger: context.logger)
        }
        group.on(InternalEndpoints.finalizePhoneMFASignIn) { body, context in
            let (user, session) = try await accounts.phone.finalizeSignIn(body, logger: context.logger)
            context.logger.info(
                "second factor sign-in",
                metadata: [
                    "tenant.id": .string(body.scope.key), "user.id": .string(user.localId), "mfa.factor": "phone",
                ])
            return SessionCreatedResponse(user: user, session: session)
        }
    }

    @Sendable func signUpPassword(_ body: SignUpPasswordRequest, context: DirectoryInternalContext) async throws
        -> SessionCreatedResponse
    {
        let (user, session) = try await accounts.passwords.signUpPassword(body, logger: context.logger)
        context.logger.info(
            body.localId == nil ? "password user created" : "password linked to user",
            metadata: ["tenant.id": .string(body.scope.key), "user.id": .string(user.localId)])
        return SessionCreatedResponse(user: user, session: session)
    }

    @Sendable func signInWithPassword(_ body: SignInWithPasswordRequest, context: DirectoryInternalContext) async throws
        -> SessionCreatedResponse
    {
        try await accounts.passwords.signInWithPassword(body, logger: context.logger)
    }

    @Sendable func authMethods(_ body: AuthMethodsRequest, context: DirectoryInternalContext) async throws
        -> AuthMethodsResponse
    {
        try await accounts.passwords.authMethods(body, logger: context.logger)
    }

    @Sendable func updateAccount(_ body: UpdateAccountRequest, context: DirectoryInternalContext) async throws
        -> UpdateAccountResponse
    {
        let answer = try await accounts.passwords.updateAccount(body, logger: context.logger)
        context.logger.info(
            "user updated itself",
            metadata: [
                "tenant.id": .string(body.scope.key), "user.id": .string(body.localId),
                "credentials.changed": .stringConvertible(answer.session != nil),
            ])
        return answer
    }

    @Sendable func signUpAnonymous(_ body: SignUpAnonymousRequest, context: DirectoryInternalContext) async throws
        -> SessionCreatedResponse
    {
        let (user, session) = try await accounts.sessions.signUpAnonymous(
            scope: body.scope, refreshTokenHash: body.refreshTokenHash,
            sessionExpiresAt: body.sessionExpiresAt, clientIP: body.clientIP, logger: context.logger)
        context.logger.info(
            "anonymous user created",
            metadata: ["tenant.id": .string(body.scope.key), "user.id": .string(user.localId)])
        return SessionCreatedResponse(user: user, session: session)
    }

    @Sendable func getAccount(_ body: AccountRequest, context: DirectoryInternalContext) async throws -> AccountResponse
    {
        let (user, credentialSeq) = try await accounts.sessions.userAndCredentialSeq(
            scope: body.scope, localId: body.localId, withFactors: body.withFactors == true, logger: context.logger)
        // Only a token of the second `validSince` names needs its session looked at (older ones are
        // refused and later ones stand by the second alone), and only when something ever revoked
        // the user's sessions: a user as signed up has `credential_seq` 0 and nothing to look at.

        guard let session = body.session, body.issuedAt == user.validSince, credentialSeq > 0 else {
            return AccountResponse(user: user)
        }
        let ended = try await accounts.sessions.sessionEnded(
            scope: body.scope, localId: body.localId, familyId: session, logger: context.logger)
        return AccountResponse(user: user, sessionEnded: ended)
    }

    @Sendable func deleteAccount(_ body: AccountRequest, context: DirectoryInternalContext) async throws -> EmptyObject
    {
        try await accounts.sessions.deleteByUser(
            scope: body.scope, localId: body.localId, logger: context.logger)
        context.logger.info(
            "user deleted itself",
            metadata: ["tenant.id": .string(body.scope.key), "user.id": .string(body.localId)])
        return EmptyObject()
    }

    @Sendable func rotate(_ body: RotateRefreshTokenRequest, context: DirectoryInternalContext) async throws
        -> RotateRefreshTokenResponse
    {
        try await accounts.sessions.rotateRefreshToken(body, logger: context.logger)
    }
}
