import PostgresNIO

/// A row read by its columns' names. Its statement names every column once (`AS` where two tables
/// share a name, as a user's and a provider link's `email`) and the row type reads each by that name:
/// adding a column is the SELECT and the field, and the order of the SELECT is free. The prepared
/// statements' `decodeRow` is `Row(row.makeRandomAccess())`.
protocol NamedRow: Sendable {
    init(_ row: PostgresRandomAccessRow) throws
}

/// A column a row type reads that its statement does not select: a mistake in the code, which any
/// test running the statement finds. Thrown (the request answers 500) rather than PostgresNIO's trap.
struct MissingColumn: Error, CustomStringConvertible {
    let name: String
    var description: String { "the statement selects no column \"\(name)\"" }
}

extension PostgresRandomAccessRow {
    /// The column `name`, decoded.
    func value<T: PostgresDecodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        guard contains(name) else { throw MissingColumn(name: name) }
        return try self[name].decode(T.self)
    }
}
