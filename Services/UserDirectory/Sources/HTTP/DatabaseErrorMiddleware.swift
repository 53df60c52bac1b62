import Hummingbird
import Logging
import PostgresNIO
import Prometheus
import TesseraShared

/// A PostgreSQL that is down, restarting or refusing connections is a dependency outage: clients get `503
/// UNAVAILABLE` with `Retry-After`, never a 500 (docs/protocol/README.md#the-surface); text it cannot store
/// is a 400. Inside the error middleware, so the answer has the Firebase shape and the request id.
struct DatabaseErrorMiddleware<Context: TesseraContext>: RouterMiddleware {
    /// Requests answered 503 because PostgreSQL was unavailable (`tessera_db_unavailable_total`).
    var unavailable: Counter? = nil

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as PSQLError where error.isOutage {
            context.logger.warning(
                "PostgreSQL unavailable", metadata: ["psql.code": .string(error.code.description)])
            unavailable?.increment()
            throw FirebaseError.unavailable("The database is unavailable; retry shortly.")
        } catch let error as DatabaseUnavailable {
            context.logger.warning("PostgreSQL unavailable", metadata: ["db.error": .string(error.description)])
            unavailable?.increment()
            throw FirebaseError.unavailable("The database is unavailable; retry shortly.")
        } catch let error as PSQLError where Self.isUnstorableText(error) {
            // Text PostgreSQL cannot store (a NUL character) is the caller's input, not a fault.
            throw FirebaseError.invalidArgument("Invalid value: text must not contain NUL characters.")
        } catch let error as PSQLError {
            // Any other is a bug: logged without the server's `detail`, which quotes row values
            // (`Key (tenant_id, email)=(…)`), and without the query's text.
            context.logger.error("unhandled database error", metadata: Self.redacted(error))
            throw FirebaseError.internal
        }
    }

    /// The code, SQLSTATE, message, constraint and table of a PostgreSQL error: what identifies the
    /// fault, nothing of the data.
    static func redacted(_ error: PSQLError) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["psql.code": .string(error.code.description)]
        let fields: [(String, PSQLError.ServerInfo.Field)] = [
            ("psql.sqlstate", .sqlState), ("psql.message", .message), ("psql.constraint", .constraintName),
            ("psql.table", .tableName),
        ]
        for (key, field) in fields {
            if let value = error.serverInfo?[field] { metadata[key] = .string(value) }
        }
        return metadata
    }

    /// 22021 (a NUL or an invalid byte sequence) and 22P05 (an untranslatable character).
    static func isUnstorableText(_ error: PSQLError) -> Bool {
        error.has(.characterNotInRepertoire) || error.has(.untranslatableCharacter)
    }
}
