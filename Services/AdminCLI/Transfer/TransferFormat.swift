import Foundation
import TesseraShared

/// The export file (docs/cli.md, "Export format"):
///
/// ```
/// {"users": [ …the Firebase CLI's auth:export JSON format… ],
///  "hashConfig": {"algorithm": "SCRYPT", "signerKey", "saltSeparator", "rounds", "memoryCost"},
///  "tessera": {"version": 1, "exportedAt", "projectId", "tenant": {…} | null, "projectConfig"?,
///              "providers": {"defaultSupportedIdpConfigs": […], "oauthIdpConfigs": […]},
///              "mailTemplates": […],
///              "users": [{"localId", "tesseraPasswordHash"?, "providerUserInfo"?}, …]}}
/// ```
///
/// `users` holds only what `firebase auth:import` accepts: its importer refuses a user with any other member,
/// or a provider other than google.com, facebook.com, twitter.com and github.com (firebase-tools
/// src/accountImporter.ts, `validateUserJson`). What Firebase's format cannot carry — a password hash the
/// scope's hash config does not describe (`tesseraPasswordHash`, the batchCreate settings it needs with the
/// hash and salt), the other providers (apple.com, microsoft.com, yahoo.com, oidc.*), `emailLinkSignin` and
/// `customAuth` — goes to `tessera.users`, by localId; `tessera import` puts the two back together, and also
/// reads those members inside a user. `tesseraPasswordHashWithheld` marks a user of a tenant whose hash the
/// server does not export (it needs the project's key).
enum TransferFormat {
    static let version: Int64 = 1

    /// The members of a user that Firebase's JSON export writes (and its importer accepts), with
    /// `lastLoginAt` renamed `lastSignedInAt` as its exporter does.
    static let firebaseUserKeys = [
        "localId", "email", "emailVerified", "passwordHash", "salt", "displayName", "photoUrl", "createdAt",
        "phoneNumber", "disabled", "customAttributes",
    ]
    static let firebaseProviders: Set<String> = ["google.com", "facebook.com", "twitter.com", "github.com"]
    static let firebaseProviderKeys = ["providerId", "rawId", "email", "displayName", "photoUrl"]
    /// A second factor's members in both formats; only phone factors move (a TOTP seed never leaves the
    /// server it was enrolled on, docs/protocol/mfa.md#admins).
    static let factorKeys = ["mfaEnrollmentId", "displayName", "phoneInfo", "enrolledAt"]

    /// A user's phone factors (`mfaInfo`), or nil without any.
    static func phoneFactors(_ user: JSONValue) -> JSONValue? {
        let factors: [JSONValue] = (user["mfaInfo"]?.arrayValue ?? []).compactMap { factor in
            guard factor["phoneInfo"]?.stringValue != nil else { return nil }
            var picked: [String: JSONValue] = [:]
            for key in factorKeys {
                if let value = factor[key], value != .null { picked[key] = value }
            }
            return .object(picked)
        }
        return factors.isEmpty ? nil : .array(factors)
    }

    /// Whether a user has a second factor that does not move (TOTP).
    static func hasUnmovableFactor(_ user: JSONValue) -> Bool {
        (user["mfaInfo"]?.arrayValue ?? []).contains { $0["phoneInfo"]?.stringValue == nil }
    }

    /// Provider entries derived from the user's own fields (docs/protocol/accounts.md#the-user-record): never
    /// exported, never imported.
    static let derivedProviders: Set<String> = ["password", "phone"]

    /// A `batchGet` user → (the user in Firebase's export format, what only Tessera can carry or nil).
    static func split(_ user: JSONValue) -> (firebase: JSONValue, extra: JSONValue?) {
        var out: [String: JSONValue] = [:]
        for key in firebaseUserKeys {
            if let value = user[key], value != .null { out[key] = value }
        }
        if let last = user["lastLoginAt"], last != .null { out["lastSignedInAt"] = last }
        out["mfaInfo"] = phoneFactors(user)
        var firebaseProviders: [JSONValue] = []
        var otherProviders: [JSONValue] = []
        for provider in user["providerUserInfo"]?.arrayValue ?? [] {
            guard let id = provider["providerId"]?.stringValue, !derivedProviders.contains(id) else { continue }
            if self.firebaseProviders.contains(id) {
                var picked: [String: JSONValue] = [:]
                for key in firebaseProviderKeys {
                    if let value = provider[key], value != .null { picked[key] = value }
                }
                firebaseProviders.append(.object(picked))
            } else {
                otherProviders.append(provider.removing(["screenName"]))
            }
        }
        if !firebaseProviders.isEmpty { out["providerUserInfo"] = .array(firebaseProviders) }
        var extra: [String: JSONValue] = [:]
        if let hash = user["tesseraPasswordHash"], hash != .null {
            extra["tesseraPasswordHash"] = hash
            // Its hash is not one the scope's hashConfig describes: never a Firebase `passwordHash`.
            out["passwordHash"] = nil
            out["salt"] = nil
        } else if user[withheldKey]?.boolValue == true {
            // A tenant's hash that needs the project's key: the server kept it back
            // (docs/architecture.md, "Hash keys across scopes"); the user is exported without one.
            extra[withheldKey] = .bool(true)
        }
        // Marks Firebase's format has no member for (docs/protocol/accounts.md#the-user-record): email-link
        // sign-in (a `password` provider without a password) and a user made by a custom token (no email,
        // provider or password, and still not anonymous).
        for mark in markKeys where user[mark]?.boolValue == true { extra[mark] = .bool(true) }
        if !otherProviders.isEmpty { extra["providerUserInfo"] = .array(otherProviders) }
        guard !extra.isEmpty, let localId = user["localId"] else { return (.object(out), nil) }
        extra["localId"] = localId
        return (.object(out), .object(extra))
    }

    /// The members of a user that `accounts:batchCreate` takes (docs/protocol/admin.md#admin-endpoints,
    /// docs/protocol/accounts.md#the-user-record).
    static let batchCreateKeys = [
        "localId", "email", "emailVerified", "displayName", "photoUrl", "phoneNumber", "disabled", "customAttributes",
        "createdAt", "lastLoginAt", "passwordHash", "salt",
    ]
    /// A user whose password hash the server withheld (a tenant's hash made with the project's key):
    /// kept in `tessera.users`, never sent to batchCreate; the user is imported without a password.
    static let withheldKey = "tesseraPasswordHashWithheld"

    /// Whether a user of `tessera.users` (or a hand-made user) is marked `withheldKey`.
    static func isWithheld(_ value: JSONValue?) -> Bool { value?[withheldKey]?.boolValue == true }

    /// Tessera's marks of a user, kept in `tessera.users` and sent to batchCreate as they are.
    static let markKeys = ["emailLinkSignin", "customAuth"]
    static let batchCreateProviderKeys = ["providerId", "rawId", "federatedId", "email", "displayName", "photoUrl"]

    /// An exported (or Firebase) user, and its Tessera extras → a batchCreate user (field names
    /// mapped, `tenantId` dropped: the target decides the tenant) and its own hash settings, if any.
    static func importUser(_ user: JSONValue, extra: JSONValue?) -> (user: JSONValue, hash: HashParameters?) {
        var out: [String: JSONValue] = [:]
        for key in batchCreateKeys {
            if let value = user[key], value != .null { out[key] = value }
        }
        if out["lastLoginAt"] == nil, let last = user["lastSignedInAt"], last != .null { out["lastLoginAt"] = last }
        out["mfaInfo"] = phoneFactors(user)
        for mark in markKeys where (extra?[mark] ?? user[mark])?.boolValue == true { out[mark] = .bool(true) }
        var providers: [JSONValue] = []
        var seen: Set<String> = []
        let extraProviders = extra?["providerUserInfo"]?.arrayValue ?? []
        for provider in (user["providerUserInfo"]?.arrayValue ?? []) + extraProviders {
            guard let id = provider["providerId"]?.stringValue, !derivedProviders.contains(id) else { continue }
            var picked: [String: JSONValue] = [:]
            for key in batchCreateProviderKeys {
                if let value = provider[key], value != .null { picked[key] = value }
            }
            let identity = id + "\u{0}" + (picked["rawId"]?.stringValue ?? picked["federatedId"]?.stringValue ?? "")
            if seen.insert(identity).inserted { providers.append(.object(picked)) }
        }
        if !providers.isEmpty { out["providerUserInfo"] = .array(providers) }
        // A hash the source scope's hash config does not describe, with the settings it needs (it
        // wins over a `passwordHash` beside it, which the file's hashConfig would misread).
        if let foreign = extra?["tesseraPasswordHash"] ?? user["tesseraPasswordHash"],
            let settings = HashParameters(userHash: foreign), let hash = foreign["passwordHash"]?.stringValue
        {
            out["passwordHash"] = .string(hash)
            out["salt"] = foreign["salt"]?.stringValue.map(JSONValue.string)
            return (.object(out), settings)
        }
        return (.object(out), nil)
    }

    /// The scope settings an import applies (tenant resource names; the project Config accepts the
    /// same names as aliases): mask path → value.
    static func settings(from scope: JSONValue) -> [(path: String, value: JSONValue)] {
        var result: [(String, JSONValue)] = []
        for key in [
            "allowPasswordSignup", "enableEmailLinkSignin", "enableAnonymousUser", "disableAuth",
            "autodeleteAnonymousUsers",
        ] {
            if let value = scope[key], value != .null { result.append((key, value)) }
        }
        for key in ["disabledUserSignup", "disabledUserDeletion"] {
            if let value = scope["client"]?["permissions"]?[key], value != .null {
                result.append(("client.permissions.\(key)", value))
            }
        }
        if case .object(let limits)? = scope["rateLimits"] {
            for (key, value) in limits.sorted(by: { $0.key < $1.key }) where value != .null {
                result.append(("rateLimits.\(key)", value))
            }
        }
        return result
    }

    /// A request body holding `settings` at their dotted paths.
    static func body(_ settings: [(path: String, value: JSONValue)], extra: [String: JSONValue] = [:]) -> JSONValue {
        var root: JSONValue = .object(extra)
        for (path, value) in settings {
            root = set(root, path.split(separator: ".").map(String.init), value)
        }
        return root
    }

    private static func set(_ node: JSONValue, _ path: [String], _ value: JSONValue) -> JSONValue {
        guard let first = path.first else { return value }
        let child = node[first] ?? .object([:])
        return node.setting(first, set(child, Array(path.dropFirst()), value))
    }
}
