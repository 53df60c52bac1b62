import Logging
import PostgresNIO

/// One numbered, append-only schema change, each in its own file of `Migrations/` (`NNN-name.swift`).
/// Migrations are compiled into the binary (no resource bundle to lose in a container); never edit
/// one that has shipped, add the next number instead.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    public let statements: [String]
}

public enum Migrations {
    public static let all: [Migration] = [
        .initial,
        .passwords,
        .oobCodesAndMailOutbox,
        .phoneNumbers,
        .adminCredentialsAndAuditLog,
        .federatedProvidersAndCustomTokens,
        .cleanup,
        .rateLimits,
        .rotateRefreshTokenFunction,
        .refreshFamiliesHotRevocation,
        .rotateRefreshTokenReturnsUser,
        .tenantCountersAndAuditGoWithTheTenant,
        .emailLinkSignIn,
        .tenantHashKeysAndCredentialSequence,
        .consoleSessions,
        .authorizationFlows,
        .revocationEndsSessions,
        .initialEmail,
        .providerLinkEmails,
        .scopeMfaConfig,
        .linkedAccountsArePermanent,
        .mfaEnrollments,
        .mfaSignIns,
        .smsOutbox,
        .phoneSignIn,
        .mfaEnrollmentOrder,
    ]

    public static var latestVersion: Int { all.last?.version ?? 0 }
}

public enum MigrationError: Error, CustomStringConvertible {
    case unknownSchema(applied: [Int], known: Int)
    case pending([Int])

    public var description: String {
        switch self {
        case .unknownSchema(let applied, let known):
            "the database has migrations \(applied) but this binary knows only up to \(known): refusing to run against an unknown schema"
        case .pending(let versions):
            "migrations \(versions) are pending: run `user-directory migrate` (or set TESSERA_AUTO_MIGRATE=true)"
        }
    }
}

/// Applies migrations in one transaction under an advisory lock, so that several replicas or a
/// migration job racing a service never apply one twice.
public struct MigrationRunner: Sendable {
    static let advisoryLockKey: Int64 = 0x7465_7373_6572_61  // "tessera"
    let client: Database
    let migrations: [Migration]

    public init(client: Database, migrations: [Migration] = Migrations.all) {
        self.client = client
        self.migrations = migrations
    }

    /// Applies every pending migration; returns the versions applied.
    @discardableResult
    public func migrate(logger: Logger) async throws -> [Int] {
        let migrations = self.migrations
        return try await client.transaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
            let applied = try await Self.appliedVersions(connection, logger: logger)
            let known = Set(migrations.map(\.version))
            let unknown = applied.filter { !known.contains($0) }
            guard unknown.isEmpty else {
                throw MigrationError.unknownSchema(applied: applied, known: migrations.last?.version ?? 0)
            }
            var done: [Int] = []
            for migration in migrations where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
                logger.info("applied migration", metadata: ["migration.version": "\(migration.version)"])
                done.append(migration.version)
            }
            return done
        }
    }

    /// Checks that the schema is exactly what this binary knows; returns the current version.
    public func check(logger: Logger) async throws -> Int {
        let exists =
            try await client.query(
                "SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger
            ).decode(Bool.self).first { _ in true } ?? false
        let known = Set(migrations.map(\.version))
        var applied: [Int] = []
        if exists {
            applied = try await client.withConnection { try await Self.appliedVersions($0, logger: logger) }
        }
        let unknown = applied.filter { !known.contains($0) }
        guard unknown.isEmpty else {
            throw MigrationError.unknownSchema(applied: applied, known: migrations.last?.version ?? 0)
        }
        let pending = migrations.map(\.version).filter { !applied.contains($0) }
        guard pending.isEmpty else { throw MigrationError.pending(pending) }
        return applied.max() ?? 0
    }

    static func appliedVersions(_ connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        var versions: [Int] = []
        for try await version in try await connection.query(
            "SELECT version FROM schema_migrations ORDER BY version", logger: logger
        ).decode(Int.self) {
            versions.append(version)
        }
        return versions
    }
}
