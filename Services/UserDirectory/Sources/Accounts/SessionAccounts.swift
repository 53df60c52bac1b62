import Foundation
import Logging
import PostgresNIO
import Prometheus
import TesseraShared

/// Anonymous sign-up, the end user's own lookup and deletion, and refresh-token rotation
/// (docs/protocol/tokens.md#token-rules, docs/protocol/admin.md#self-service-settings).
struct SessionAccounts: Sendable {
    let client: Database
    let anonymousRetention: Duration
    /// Counts detected reuse (`tessera_refresh_token_reuse_total`): a spike is a stolen-token signal.
    var reuse: Counter? = nil

    public func signUpAnonymous(
        scope: Scope, refreshTokenHash: String, sessionExpiresAt: Int64, clientIP: String? = nil, logger: Logger
    ) async throws -> (UserRecord, SessionInfo) {
        let retentionSeconds = anonymousRetention.timeInterval
        return try await client.transaction(logger: logger) { connection in
            let flags = try await ScopeFlags.read(connection, scope: scope, lock: true, logger: logger)
            if !flags.enableAnonymousUser { throw FirebaseError.invalid(.adminOnlyOperation) }
            try await flags.admitNewAccount(connection, scope: scope, clientIP: clientIP, logger: logger)
            let autodelete = flags.autodeleteAnonymousUsers

            let now = AccountRows.nowMillis()
            let nowSeconds = now / 1000
            let localId = Secrets.randomAlphanumeric(28)
            let familyId = UUID()
            // The user, its session and the session's first token in one statement (one round trip).
            try await connection.query(
                """
                WITH new_user AS (
                    INSERT INTO users (tenant_id, local_id, valid_since, created_at, last_login_at, last_refresh_at,
                        is_anonymous, anonymous_due_at)
                    VALUES (\(scope: scope), \(localId), \(nowSeconds), \(now), \(now), \(now), true,
                        CASE WHEN \(autodelete) THEN now() + make_interval(secs => \(retentionSeconds)) END)
                ), new_family AS (
                    INSERT INTO refresh_families (tenant_id, family_id, local_id, sign_in_provider, auth_time,
                        expires_at, created_at)
                    VALUES (\(scope: scope), \(familyId), \(localId), 'anonymous', \(nowSeconds),
                        to_timestamp(\(Double(sessionExpiresAt))), to_timestamp(\(Double(nowSeconds))))
                )
                INSERT INTO refresh_tokens (token_hash, tenant_id, family_id, issued_at)
                VALUES (\(refreshTokenHash), \(scope: scope), \(familyId), \(nowSeconds))
                """, logger: logger)
            let session = SessionInfo(
                newFamily: familyId, provider: "anonymous", authTime: nowSeconds, extraClaims: nil)
            let user = UserRecord(
                tenantId: scope.tenantID, localId: localId, validSince: nowSeconds, createdAt: now,
                lastLoginAt: now, lastRefreshAt: now)
            return (user, session)
        }
    }

    /// A user as its own client sees it (`accounts:lookup`): one statement checks the scope and reads
    /// the user with its links.
    public func userForClient(scope: Scope, localId: String, logger: Logger) async throws -> UserRecord {
        try await userAndCredentialSeq(scope: scope, localId: localId, logger: logger).user
    }

    /// The user, and its `credential_seq`: 0 while nothing ever revoked its sessions (migration 14's
    /// trigger and `AccountRows.revokeSessions` move it), so no ID token of it needs its session
    /// looked at (docs/design-notes.md, "Revocation is exact").
    /// With `withFactors`, the user's `mfaInfo` is read in the same statement.
    public func userAndCredentialSeq(scope: Scope, localId: String, withFactors: Bool = false, logger: Logger)
        async throws -> (user: UserRecord, credentialSeq: Int64)
    {
        var scopeDisabled: Bool?
        var credentialSeq: Int64 = 0
        var factors: String?
        var users = UserRows()
        let rows =
            withFactors
            ? try await client.execute(UserOfEnabledScopeWithFactors(scope: scope, localId: localId), logger: logger)
            : try await client.execute(UserOfEnabledScope(scope: scope, localId: localId), logger: logger)
        for try await row in rows {
            scopeDisabled = row.disableAuth
            credentialSeq = row.credentialSeq ?? 0
            factors = factors ?? row.mfaInfo
            users.add(row.user)
        }
        guard let scopeDisabled else { throw FirebaseError.invalid(.tenantNotFound) }
        if scopeDisabled { throw FirebaseError.invalid(.projectDisabled) }
        guard var user = users.byId[localId] else { throw FirebaseError.invalid(.userNotFound) }
        if let factors {
            user.mfaInfo = try MFAEnrollmentInfo.list(json: factors)
        }
        return (user, credentialSeq)
    }

    /// Whether the user's session `familyId` was revoked, or is no longer stored (an unknown one
    /// counts as ended).
    public func sessionEnded(scope: Scope, localId: String, familyId: String, logger: Logger) async throws -> Bool {
        guard let family = UUID(uuidString: familyId) else { return true }
        let rows = try await client.query(
            """
            SELECT revoked_at IS NOT NULL FROM refresh_families
            WHERE tenant_id = \(scope: scope) AND family_id = \(family) AND local_id = \(localId)
            """, logger: logger)
        for try await revoked in rows.decode(Bool.self) { return revoked }
        return true
    }

    public func deleteByUser(scope: Scope, localId: String, logger: Logger) async throws {
        try await client.transaction(logger: logger) { connection in
            let flags = try await ScopeFlags.read(connection, scope: scope, lock: true, logger: logger)
            if flags.disabledUserDeletion { throw FirebaseError.invalid(.adminOnlyOperation) }
            if !(try await AccountRows.deleteUser(connection, scope: scope, localId: localId, logger: logger)) {
                throw FirebaseError.invalid(.userNotFound)
            }
        }
    }

    /// Rotates a refresh token: one statement (migration 11's function) makes every check of
    /// docs/protocol/tokens.md#token-rules and the rotation atomically, under the family's row lock, and
    /// returns the user with its links.
    public func rotateRefreshToken(_ request: RotateRefreshTokenRequest, logger: Logger) async throws
        -> RotateRefreshTokenResponse
    {
        let now = AccountRows.nowMillis()
        let rows = try await client.execute(
            RotateRefreshToken(
                tokenHash: request.tokenHash, newTokenHash: request.newTokenHash, sealed: request.sealedSuccessor,
                graceSeconds: Double(request.graceSeconds), idleSeconds: Double(request.idleSeconds), nowMillis: now),
            logger: logger)
        var answer: AccountRows.RotationRow?
        var users = UserRows()
        for try await row in rows {
            answer = row.rotation
            users.add(row.user)
        }
        guard let answer, answer.outcome == "rotated" || answer.outcome == "replayed", let familyId = answer.familyId,
            let localId = answer.localId, let provider = answer.provider, let authTime = answer.authTime,
            let issuedAt = answer.tokenIssuedAt
        else {
            switch answer?.outcome {
            case "reuse"?:
                logger.notice("refresh token reuse detected; session revoked")
                reuse?.increment()
                throw FirebaseError.invalid(.tokenExpired)
            case let outcome? where AccountRows.rotationErrors.contains(outcome):
                throw FirebaseError.invalid(ErrorCode(rawValue: outcome)!)
            default:
                logger.error(
                    "unexpected refresh rotation outcome", metadata: ["outcome": "\(answer?.outcome ?? "none")"])
                throw FirebaseError.internal
            }
        }
        guard let user = users.byId[localId] else { throw FirebaseError.invalid(.userNotFound) }
        var session = SessionInfo(
            familyId: familyId.uuidString.lowercased(), signInProvider: provider, authTime: authTime,
            tokenIssuedAt: issuedAt, extraClaims: answer.extraClaims)
        session.secondFactor = answer.secondFactor
        session.secondFactorId = answer.secondFactorId
        if answer.outcome == "replayed" {
            guard let sealed = answer.sealed else { throw FirebaseError.internal }
            return .init(outcome: .replayed, user: user, session: session, sealedSuccessor: sealed)
        }
        return .init(outcome: .rotated, user: user, session: session, sealedSuccessor: nil)
    }
}
