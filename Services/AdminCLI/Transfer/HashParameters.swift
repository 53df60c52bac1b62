import Foundation
import TesseraShared

/// The hash settings of one `accounts:batchCreate` request (docs/protocol/accounts.md#firebase-scrypt): the
/// algorithm and its parameters under batchCreate's field names (`signerKey`, `saltSeparator`, `rounds`,
/// `memoryCost`, `cpuMemCost`, `parallelization`, `blockSize`, `dkLen`, `passwordHashOrder`).
struct HashParameters: Equatable, Sendable {
    var algorithm: String
    var parameters: [String: JSONValue] = [:]

    static let parameterNames: Set<String> = [
        "signerKey", "saltSeparator", "rounds", "memoryCost", "cpuMemCost", "parallelization", "blockSize", "dkLen",
        "passwordHashOrder",
    ]

    /// The request members: `hashAlgorithm` and the parameters.
    var requestFields: [String: JSONValue] {
        parameters.merging(["hashAlgorithm": .string(algorithm)]) { _, new in new }
    }

    /// One string per distinct setting, for grouping users by them.
    var key: String {
        (try? JSON.compact(.object(requestFields))) ?? algorithm
    }

    /// From a Tessera export's `hashConfig` (`{algorithm, signerKey, saltSeparator, rounds, memoryCost}`).
    init?(hashConfig value: JSONValue?) {
        guard let value, let algorithm = value["algorithm"]?.stringValue ?? value["hashAlgorithm"]?.stringValue else {
            return nil
        }
        self.algorithm = algorithm.uppercased()
        for name in Self.parameterNames {
            if let member = value[name], member != .null { parameters[name] = member }
        }
    }

    /// From a user's `tesseraPasswordHash`: every member but the hash and salt is a request setting.
    init?(userHash value: JSONValue) {
        guard let algorithm = value["hashAlgorithm"]?.stringValue ?? value["algorithm"]?.stringValue else {
            return nil
        }
        self.algorithm = algorithm
        for name in Self.parameterNames {
            if let member = value[name], member != .null { parameters[name] = member }
        }
    }

    init(algorithm: String, parameters: [String: JSONValue] = [:]) {
        self.algorithm = algorithm
        self.parameters = parameters
    }

    /// The Firebase project's hash parameters, from what the console shows
    /// (`hash_config { algorithm: SCRYPT, base64_signer_key: …, base64_salt_separator: …, rounds: 8,
    /// mem_cost: 14, }`) or from JSON (`{algorithm, signerKey | base64_signer_key, saltSeparator |
    /// base64_salt_separator, rounds, memoryCost | mem_cost}`, also inside `hashConfig` or
    /// `signIn.hashConfig`, so a Tessera export or a v2 Config works as well).
    static func parse(_ text: String) throws -> [String: String] {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") {
            guard var value = try? JSON.decode(Data(trimmed.utf8)) else {
                throw CLIError.usage("the hash config is neither JSON nor the console's hash_config block")
            }
            if let nested = value["hashConfig"] ?? value["signIn"]?["hashConfig"] { value = nested }
            guard case .object(let members) = value else { throw CLIError.usage("the hash config is not an object") }
            return members.compactMapValues { member in
                switch member {
                case .string(let text): text
                case .int(let number): String(number)
                case .double(let number): String(number)
                default: nil
                }
            }
        }
        var body = Substring(trimmed)
        if let open = body.firstIndex(of: "{"), let close = body.lastIndex(of: "}"), open < close {
            body = body[body.index(after: open)..<close]
        }
        var result: [String: String] = [:]
        for part in body.split(whereSeparator: { $0 == "," || $0.isNewline }) {
            guard let colon = part.firstIndex(of: ":") else {
                if part.trimmingCharacters(in: .whitespaces).isEmpty { continue }
                throw CLIError.usage("cannot read \"\(part.trimmingCharacters(in: .whitespaces))\" in the hash config")
            }
            let name = part[..<colon].trimmingCharacters(in: .whitespaces)
            var value = part[part.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = String(value.dropFirst().dropLast())
            }
            result[name] = value
        }
        return result
    }

    /// Settings from the console's or JSON's names (see `parse`), with flags on top.
    static func from(_ names: [String: String], flags: HashOptions) throws -> HashParameters? {
        func pick(_ keys: String...) -> String? { keys.lazy.compactMap { names[$0] }.first }
        guard let algorithm = (flags.hashAlgo ?? pick("algorithm", "hashAlgorithm", "hash_algo"))?.uppercased() else {
            return nil
        }
        var parameters: [String: JSONValue] = [:]
        func integer(_ flag: Int?, _ keys: String..., as name: String) throws {
            let raw = flag.map(String.init) ?? keys.lazy.compactMap { names[$0] }.first
            guard let raw else { return }
            guard let value = Int64(raw) else { throw CLIError.usage("\(name) must be a whole number, not \(raw)") }
            parameters[name] = .int(value)
        }
        if let key = flags.hashKey ?? pick("signerKey", "base64_signer_key", "hashKey", "signer_key") {
            parameters["signerKey"] = .string(key)
        }
        if let separator = flags.saltSeparator ?? pick("saltSeparator", "base64_salt_separator", "salt_separator") {
            parameters["saltSeparator"] = .string(separator)
        }
        try integer(flags.rounds, "rounds", as: "rounds")
        if algorithm == "STANDARD_SCRYPT" {
            // As `firebase auth:import`: --mem-cost is standard scrypt's CPU/memory cost.
            try integer(flags.memCost, "cpuMemCost", "memoryCost", "mem_cost", "memCost", as: "cpuMemCost")
        } else {
            try integer(flags.memCost, "memoryCost", "mem_cost", "memCost", as: "memoryCost")
        }
        try integer(flags.parallelization, "parallelization", as: "parallelization")
        try integer(flags.blockSize, "blockSize", "block_size", as: "blockSize")
        try integer(flags.dkLen, "dkLen", "dk_len", as: "dkLen")
        if let order = flags.hashInputOrder?.uppercased() ?? pick("passwordHashOrder") {
            switch order {
            case "SALT_FIRST", "SALT_AND_PASSWORD": parameters["passwordHashOrder"] = .string("SALT_AND_PASSWORD")
            case "PASSWORD_FIRST", "PASSWORD_AND_SALT": parameters["passwordHashOrder"] = .string("PASSWORD_AND_SALT")
            default: throw CLIError.usage("--hash-input-order must be SALT_FIRST or PASSWORD_FIRST")
            }
        }
        let result = HashParameters(algorithm: algorithm, parameters: parameters)
        try result.check()
        return result
    }

    /// What `firebase auth:import` checks before it sends anything.
    func check() throws {
        switch algorithm {
        case "SCRYPT":
            guard let key = parameters["signerKey"]?.stringValue, !key.isEmpty else {
                throw CLIError.usage("SCRYPT needs the signer key (base64_signer_key, --hash-key)")
            }
            guard let rounds = parameters["rounds"]?.intValue, (1...8).contains(rounds) else {
                throw CLIError.usage("SCRYPT needs rounds 1–8")
            }
            // 1–17: Firebase's 1–14 and the costs Tessera's own hashes may have (the directory takes the same).
            guard let cost = parameters["memoryCost"]?.intValue, (1...17).contains(cost) else {
                throw CLIError.usage("SCRYPT needs a memory cost (mem_cost, --mem-cost) of 1–17")
            }
        case "HMAC_SHA512", "HMAC_SHA256", "HMAC_SHA1", "HMAC_MD5":
            guard parameters["signerKey"] != nil else { throw CLIError.usage("\(algorithm) needs --hash-key") }
        case "MD5", "SHA1", "SHA256", "SHA512", "PBKDF_SHA1", "PBKDF2_SHA256":
            guard parameters["rounds"] != nil else { throw CLIError.usage("\(algorithm) needs --rounds") }
        case "BCRYPT", "STANDARD_SCRYPT":
            break
        default:
            throw CLIError.usage("unknown hash algorithm \(algorithm)")
        }
    }
}
