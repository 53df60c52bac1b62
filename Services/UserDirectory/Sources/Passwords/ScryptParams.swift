/// The parameters stored with a hash (JSON in `users.password_params`). Native hashes carry
/// `rounds` and `memCost` and use their scope's signer key; imported ones carry what their algorithm
/// needs, including their own signer key (docs/protocol/accounts.md#passwords).
struct ScryptParams: Codable, Equatable {
    var rounds: Int
    var memCost: Int
    /// Base64; absent for hashes made with a key of the scope's.
    var signerKey: String?
    var saltSeparator: String?
    /// A tenant's hash made with the project's key, before tenants had keys of their own (migration
    /// 14 marks them). It verifies with the project's key and is re-made with the tenant's at the
    /// user's next sign-in.
    var projectKey: Bool?
}
