struct ImportedParams: Codable, Equatable {
    // STANDARD_SCRYPT
    var cpuMemCost: Int?
    var blockSize: Int?
    var parallelization: Int?
    var dkLen: Int?
    // PBKDF2_SHA256
    var rounds: Int?
    // HMAC_SHA256 (base64 key); SALT_AND_PASSWORD or PASSWORD_AND_SALT
    var signerKey: String?
    var passwordHashOrder: String?
}
