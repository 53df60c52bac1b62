import Foundation
import Hummingbird
import Logging
import TesseraShared

/// Admin user management under `/v1/projects/{p}[/tenants/{t}]/…` (docs/protocol/admin.md#admin-endpoints,
/// docs/protocol/accounts.md#the-user-record).
struct AdminAccountsController<Tenants: TenantStore> {
    let accounts: Accounts
    let tenants: Tenants

    func addRoutes(to group: RouterGroup<AdminContext>) {
        for scope in ["v1/projects/{project}", "v1/projects/{project}/tenants/{tenant}"] {
            group.post("\(scope)/accounts", use: create)
            group.post("\(scope)/accounts:lookup", use: lookup)
            group.post("\(scope)/accounts:delete", use: delete)
            group.post("\(scope)/accounts:update", use: update)
            group.post("\(scope)/accounts:batchDelete", use: batchDelete)
            group.get("\(scope)/accounts:batchGet", use: batchGet)
        }
    }

    /// What create and update check alike (docs/protocol/admin.md#admin-endpoints): the email (normalized),
    /// the password (its bounds: docs/protocol/accounts.md#passwords), the phone number (E.164) and the profile
    /// fields (2,048 characters).
    static func checked(
        email: String?, password: String?, phoneNumber: String?, displayName: String?, photoUrl: String?
    ) throws -> (email: String?, phoneNumber: String?) {
        var normalized: String?
        if let email {
            guard let valid = Credentials.normalizedEmail(email) else { throw FirebaseError.invalid(.invalidEmail) }
            normalized = valid
        }
        if let password { try Credentials.checkPassword(password) }
        let phone = try phone(phoneNumber)
        try Credentials.checkProfile(displayName: displayName, photoUrl: photoUrl)
        return (normalized, phone)
    }

    // MARK: create

    struct CreateRequest: Decodable {
        var localId: String?
        var email: String?
        var password: String?
        var displayName: String?
        var photoUrl: String?
        var phoneNumber: String?
        var emailVerified: Bool?
        var disabled: Bool?
        var tenantId: String?
        var mfaInfo: [JSONValue]?
    }

    struct CreateResponse: Encodable, Sendable {
        var kind = Kind.signUp
        var localId: String
        var email: String?
        var displayName: String?
    }

    /// `POST …/accounts`: a privileged sign-up (Admin `create_user`); the self-service switches do
    /// not apply (docs/protocol/admin.md#admin-endpoints).
    @Sendable func create(_ request: Request, context: AdminContext) async throws -> JSONResponse<CreateResponse> {
        let body = try await request.decodeJSON(CreateRequest.self, context: context)
        let scope = try await tenants.usersScope(of: context, bodyTenant: body.tenantId)
        var user = AdminNewUser()
        if let localId = body.localId {
            guard !localId.isEmpty, localId.count <= 128 else { throw FirebaseError.invalid(.invalidLocalId) }
            user.localId = localId
        }
        let fields = try Self.checked(
            email: body.email, password: body.password, phoneNumber: body.phoneNumber,
            displayName: body.displayName, photoUrl: body.photoUrl)
        user.email = fields.email
        user.password = body.password
        user.phoneNumber = fields.phoneNumber
        user.displayName = body.displayName
        user.photoUrl = body.photoUrl
        user.emailVerified = body.emailVerified ?? false
        user.disabled = body.disabled ?? false
        user.factors = try AdminFactor.parse(body.mfaInfo ?? [], field: "mfa_info")
        let created = try await accounts.admin.create(scope: scope, user: user, logger: context.logger)
        context.logger.info(
            "user created by admin", metadata: ["tenant.id": .string(scope.key), "user.id": .string(created.localId)])
        return JSONResponse(
            CreateResponse(localId: created.localId, email: created.email, displayName: created.displayName))
    }

    static func phone(_ raw: String?) throws -> String? {
        guard let raw else { return nil }
        guard Credentials.isPhoneNumber(raw) else {
            throw FirebaseError.invalid(.invalidPhoneNumber, "Invalid format.")
        }
        return raw
    }

    // MARK: lookup

    struct FederatedID: Decodable {
        var providerId: String?
        var rawId: String?
    }

    struct LookupRequest: Decodable {
        var localId: [String]?
        var email: [String]?
        var phoneNumber: [String]?
        var federatedUserId: [FederatedID]?
        var initialEmail: [String]?
        var idToken: String?
        var tenantId: String?
    }

    @Sendable func lookup(_ request: Request, context: AdminContext) async throws -> JSONResponse<LookupResponse> {
        let body = try await request.decodeJSON(LookupRequest.self, context: context)
        var localIds = body.localId ?? []
        if let idToken = body.idToken {
            let named = try Self.userNamed(byIDToken: idToken)
            let requested = context.parameters.get("tenant") ?? body.tenantId ?? ""
            guard named.tenant == requested else { throw FirebaseError.invalid(.tenantIdMismatch) }
            localIds.append(named.localId)
        }
        let scope = try await tenants.usersScope(of: context, bodyTenant: body.tenantId)
        if body.initialEmail != nil { throw FirebaseError.notImplemented("Lookup by initialEmail") }
        let counts = [body.localId?.count, body.email?.count, body.phoneNumber?.count, body.federatedUserId?.count]
        if counts.contains(where: { ($0 ?? 0) > 100 }) {
            throw FirebaseError.invalidArgument("INVALID_ARGUMENT : at most 100 identifiers of each kind")
        }
        var federated: [(providerId: String, rawId: String)] = []
        for id in body.federatedUserId ?? [] {
            guard let providerId = id.providerId, !providerId.isEmpty else {
                throw FirebaseError.invalid(.missingProviderId)
            }
            guard let rawId = id.rawId, !rawId.isEmpty else { throw FirebaseError.invalid(.missingRawId) }
            federated.append((providerId, rawId))
        }
        let users = try await accounts.admin.lookup(
            scope: scope, localIds: localIds, emails: body.email ?? [], phoneNumbers: body.phoneNumber ?? [],
            federated: federated, logger: context.logger)
        return JSONResponse(LookupResponse(users: users))
    }

    /// The user and tenant an ID token names, for an admin's lookup by `idToken` (misc, rest:214 of
    /// the emulator's specs). The directory holds no ID-token keys, and need not: the admin may read
    /// any user of the scope it names, so the token only says which one, and a token of another
    /// tenant is a `TENANT_ID_MISMATCH` (docs/design-notes.md, "Admin API").
    static func userNamed(byIDToken token: String) throws -> (localId: String, tenant: String) {
        guard let payload = try? JWS.unverifiedPayload(of: token),
            let claims = try? JSONDecoder().decode([String: JSONValue].self, from: payload),
            let subject = claims["sub"]?.stringValue, !subject.isEmpty
        else { throw FirebaseError.invalid(.invalidIdToken) }
        return (subject, claims["firebase"]?["tenant"]?.stringValue ?? "")
    }

    // MARK: delete

    struct DeleteRequest: Decodable {
        var localId: String?
        var tenantId: String?
    }

    @Sendable func delete(_ request: Request, context: AdminContext) async throws -> JSONResponse<DeleteResponse> {
        let body = try await request.decodeJSON(DeleteRequest.self, context: context)
        let scope = try await tenants.usersScope(of: context, bodyTenant: body.tenantId)
        guard let localId = body.localId, !localId.isEmpty else { throw FirebaseError.invalid(.missingLocalId) }
        guard try await accounts.admin.delete(scope: scope, localId: localId, logger: context.logger) else {
            throw FirebaseError.invalid(.userNotFound)
        }
        context.logger.info(
            "user deleted by admin", metadata: ["tenant.id": .string(scope.key), "user.id": .string(localId)])
        return JSONResponse(DeleteResponse())
    }

    struct BatchDeleteRequest: Decodable {
        var localIds: [String]?
        var force: Bool?
        var tenantId: String?
    }

    struct BatchDeleteResponse: Encodable, Sendable {
        struct Failure: Encodable, Sendable {
            var index: Int
            var localId: String
            var message: String
        }
        var errors: [Failure]?
    }

    @Sendable func batchDelete(_ request: Request, context: AdminContext) async throws
        -> JSONResponse<BatchDeleteResponse>
    {
        let body = try await request.decodeJSON(BatchDeleteRequest.self, context: context, limit: 4 << 20)
        let scope = try await tenants.usersScope(of: context, bodyTenant: body.tenantId)
        let ids = body.localIds ?? []
        // 1 to 1000 ids; none is outside the limit too, as production answers it.
        guard (1...1000).contains(ids.count) else { throw FirebaseError.invalid(.localIdListExceedsLimit) }
        let refused = try await accounts.admin.batchDelete(
            scope: scope, localIds: ids, force: body.force ?? false, logger: context.logger)
        context.logger.info(
            "users deleted by admin",
            metadata: [
                "tenant.id": .string(scope.key), "users.requested": "\(ids.count)", "users.refused": "\(refused.count)",
            ])
        let failures = refused.map {
            BatchDeleteResponse.Failure(
                index: $0.index, localId: $0.localId,
                message: "NOT_DISABLED : Disable the account before batch deletion.")
        }
        return JSONResponse(BatchDeleteResponse(errors: failures.isEmpty ? nil : failures))
    }

    // MARK: batchGet

    /// A user record with the real hash and salt in place of the client redaction, or neither when
    /// the hash is not exportable; with foreign hashes asked for, `tesseraPasswordHash`, or
    /// `tesseraPasswordHashWithheld: true` for a tenant's hash that needs the project's key.
    struct ExportedUserWire: Encodable, Sendable {
        var user: UserInfoWire
        var salt: String?
        var foreignHash: ForeignPasswordHash?
        var withheld: Bool

        init(_ exported: ExportedUser) {
            user = UserInfoWire(exported.user)
            user.passwordHash = exported.passwordHash
            salt = exported.salt
            foreignHash = exported.foreignHash
            withheld = exported.passwordHashWithheld
        }

        func encode(to encoder: any Encoder) throws {
            try user.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encodeIfPresent(salt, forKey: .salt)
            try container.encodeIfPresent(foreignHash, forKey: .tesseraPasswordHash)
            if withheld { try container.encode(true, forKey: .tesseraPasswordHashWithheld) }
        }

        enum Keys: String, CodingKey { case salt, tesseraPasswordHash, tesseraPasswordHashWithheld }
    }

    struct BatchGetResponse: Encodable, Sendable {
        var kind = "identitytoolkit#DownloadAccountResponse"
        var users: [ExportedUserWire]?
        var nextPageToken: String?
    }

    /// `GET …/accounts:batchGet?maxResults=&nextPageToken=` (docs/protocol/admin.md#admin-endpoints): ordered
    /// by localId, default 20, at most 1000; a full page always carries a token (the last localId). Password
    /// hashes and salts are exported in Firebase's scrypt form (docs/protocol/accounts.md#firebase-scrypt),
    /// so the project's hash config re-imports them anywhere. `tesseraForeignHashes=true` (Tessera's own, for
    /// `tessera export`) adds the hashes the hash config does not describe, each in a `tesseraPasswordHash`
    /// object with its batchCreate settings, except a tenant's hashes that need the project's key, which are
    /// marked withheld instead (docs/architecture.md, "Hash keys across scopes").
    @Sendable func batchGet(_ request: Request, context: AdminContext) async throws -> JSONResponse<
        BatchGetResponse
    > {
        let scope = try await tenants.usersScope(of: context, bodyTenant: request.uri.queryParameters.get("tenantId"))
        let requested = request.uri.queryParameters.get("maxResults", as: Int.self) ?? 20
        guard requested > 0 else { throw FirebaseError.invalid(.invalidArgument, "maxResults must be positive") }
        let limit = min(requested, 1000)
        let after = request.uri.queryParameters.get("nextPageToken").flatMap { $0.isEmpty ? nil : $0 }
        let foreign = request.uri.queryParameters.get("tesseraForeignHashes") == "true"
        let page = try await accounts.admin.batchGet(
            scope: scope, after: after, limit: limit, foreignHashes: foreign, logger: context.logger)
        let users = page.map(ExportedUserWire.init)
        return JSONResponse(
            BatchGetResponse(
                users: users.isEmpty ? nil : users, nextPageToken: page.count == limit ? page.last?.user.localId : nil))
    }

    // MARK: update

    struct UpdateRequest: Decodable {
        var localId: String?
        var tenantId: String?
        var disableUser: Bool?
        var emailVerified: Bool?
        /// Admin SDKs send a JSON number of seconds; the protocol's type is an int64 string.
        var validSince: JSONValue?
        var displayName: String?
        var photoUrl: String?
        var email: String?
        var password: String?
        var phoneNumber: String?
        var customAttributes: String?
        var deleteAttribute: [String]?
        var deleteProvider: [String]?
        var linkProviderUserInfo: LinkedProvider?
        var mfa: MFAUpdate?
    }

    struct LinkedProvider: Decodable {
        var providerId: String?
        var rawId: String?
        var email: String?
        var displayName: String?
        var photoUrl: String?
        var screenName: String?
    }

    /// `mfa` (docs/protocol/mfa.md#admins): `{}` removes every factor, `{enrollments: [...]}` makes the
    /// user's factors those its entries name, and adds phone factors for the others (`AdminFactor`). A
    /// malformed one is an invalid payload, as the protocol's parser says it (the emulator's
    /// setAccountInfo:980).
    struct MFAUpdate: Decodable {
        var enrollments: [JSONValue]?

        func factors() throws -> [AdminFactor] {
            try AdminFactor.parse(enrollments ?? [], field: "mfa.enrollments")
        }

        enum CodingKeys: CodingKey { case enrollments }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if container.contains(.enrollments), try container.decodeNil(forKey: .enrollments) {
                throw DecodingError.typeMismatch(
                    [JSONValue].self,
                    .init(codingPath: container.codingPath + [CodingKeys.enrollments], debugDescription: "not an array")
                )
            }
            enrollments = try container.decodeIfPresent([JSONValue].self, forKey: .enrollments)
        }
    }

    /// An admin's `linkProviderUserInfo`: a provider identity, linked as a sign-in with it would
    /// link it. Password, phone and anonymous are not identities one links this way.
    static func identity(_ info: LinkedProvider) throws -> FederatedIdentity {
        guard let providerId = info.providerId, !providerId.isEmpty else {
            throw FirebaseError.invalid(.missingProviderId)
        }
        guard let rawId = info.rawId, !rawId.isEmpty else { throw FirebaseError.invalid(.missingRawId) }
        guard !["password", "phone", "anonymous", "emailLink"].contains(providerId) else {
            throw FirebaseError.invalid(.invalidProviderId)
        }
        let fields = try Self.checked(
            email: info.email, password: nil, phoneNumber: nil, displayName: info.displayName, photoUrl: info.photoUrl)
        return FederatedIdentity(
            providerId: providerId, rawId: rawId, email: fields.email, displayName: info.displayName,
            photoUrl: info.photoUrl, screenName: info.screenName)
    }

    @Sendable func update(_ request: Request, context: AdminContext) async throws -> JSONResponse<
        SetAccountInfoResponse
    > {
        let body = try await request.decodeJSON(UpdateRequest.self, context: context)
        let scope = try await tenants.usersScope(of: context, bodyTenant: body.tenantId)
        guard let localId = body.localId, !localId.isEmpty else { throw FirebaseError.invalid(.missingLocalId) }
        var change = AdminUserChange()
        change.disabled = body.disableUser
        change.emailVerified = body.emailVerified
        let fields = try Self.checked(
            email: body.email, password: body.password, phoneNumber: body.phoneNumber,
            displayName: body.displayName, photoUrl: body.photoUrl)
        change.displayName = body.displayName
        change.photoUrl = body.photoUrl
        change.email = fields.email
        change.password = body.password
        change.phoneNumber = fields.phoneNumber
        if let claims = body.customAttributes { change.customAttributes = .some(try CustomClaims.validate(claims)) }
        for attribute in body.deleteAttribute ?? [] {
            switch attribute {
            case "DISPLAY_NAME": change.deleteDisplayName = true
            case "PHOTO_URL": change.deletePhotoUrl = true
            case "EMAIL": change.deleteEmail = true
            default: throw FirebaseError.invalidArgument("Invalid value at 'delete_attribute': \(attribute)")
            }
        }
        for provider in body.deleteProvider ?? [] {
            switch provider {
            case "phone": change.deletePhoneNumber = true
            case "password": throw FirebaseError.notImplemented("deleteProvider password in the admin API")
            default: change.deleteProviders.append(provider)
            }
        }
        if let info = body.linkProviderUserInfo { change.linkProvider = try Self.identity(info) }
        if let mfa = body.mfa { change.factors = try mfa.factors() }
        if let validSince = body.validSince {
            switch validSince {
            case .int(let seconds): change.validSince = seconds
            case .string(let text):
                guard let seconds = Int64(text) else {
                    throw FirebaseError.invalidArgument("Invalid value at 'valid_since'")
                }
                change.validSince = seconds
            default: throw FirebaseError.invalidArgument("Invalid value at 'valid_since'")
            }
        }
        guard
            let user = try await accounts.admin.update(
                scope: scope, localId: localId, change: change, logger: context.logger)
        else { throw FirebaseError.invalid(.userNotFound) }
        context.logger.info(
            "user updated by admin", metadata: ["tenant.id": .string(scope.key), "user.id": .string(localId)])
        return JSONResponse(SetAccountInfoResponse(user: user))
    }
}
