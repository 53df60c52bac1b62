/// A stored password: algorithm, parameters, salt and hash, per user (docs/protocol/accounts.md#passwords).
public struct StoredPassword: Sendable, Equatable {
    public var algorithm: String
    public var params: String
    public var salt: String
    public var hash: String

    public static let firebaseScrypt = "SCRYPT"
}
