import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import _CryptoExtras

@testable import TesseraShared
@testable import TokenService

/// A Google (and Apple) that signs real RS256 ID tokens, its keys served on 127.0.0.1 by a Hummingbird
/// application the test starts and stops: the emulator's specs sign in with unsigned tokens, Tessera
/// verifies them (docs/design-notes.md, "Federated providers").
enum FakeGoogle {
    static let kid = "inproc-idp-1"
    static let clientId = "inproc-idp-client"
    static let key = Result { try _RSA.Signing.PrivateKey(keySize: .bits2048) }

    static func jwks() throws -> String {
        let primitives = try key.get().publicKey.getKeyPrimitives()
        let n = Base64URL.encode(primitives.modulus)
        let e = Base64URL.encode(primitives.publicExponent)
        return #"{"keys":[{"kty":"RSA","kid":"\#(kid)","alg":"RS256","use":"sig","n":"\#(n)","e":"\#(e)"}]}"#
    }

    /// An ID token of `issuer` for this app; `claims` are added (and win).
    static func idToken(
        sub: String, issuer: String = "https://accounts.google.com", _ claims: [String: JSONValue] = [:]
    ) throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var all: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(clientId), "sub": .string(sub), "iat": .int(now),
            "exp": .int(now + 3600),
        ]
        all.merge(claims) { _, new in new }
        return try JWS.signRS256(payload: JSONEncoder().encode(JSONValue.object(all)), kid: kid, key: key.get())
    }

    /// The token service and directory of `InProcess.withTokenService`, with google.com's and
    /// apple.com's keys at this fake.
    static func withTokenService<T: Sendable>(_ test: @Sendable (TokenHarness) async throws -> T) async throws -> T {
        let document = try jwks()
        let router = Router()
        router.get("jwks") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "max-age=300"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: document)))
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: InProcess.logger)
        return try await app.test(.live) { client in
            let port = try #require(client.port)
            return try await InProcess.withTokenService(configure: { configuration in
                for provider in ["google.com", "apple.com"] {
                    configuration.providerEndpoints[provider]?.jwksURL = "http://127.0.0.1:\(port)/jwks"
                }
            }) { service in try await test(service) }
        }
    }
}

extension TokenHarness {
    /// A tenant with password sign-up (unless `fields` say otherwise), anonymous users and `providers`
    /// enabled for `FakeGoogle`'s client.
    func federatedTenant(
        _ providers: [String] = ["google.com", "apple.com"], fields: String = #""allowPasswordSignup":true"#
    ) async throws -> String {
        let tenant = try await directory.createTenantID(fields)
        for provider in providers {
            try expectOK(
                try await directory.admin.post(
                    "/v2/projects/\(InProcess.projectID)/tenants/\(tenant)/defaultSupportedIdpConfigs?idpId=\(provider)",
                    #"{"enabled":true,"clientId":"\#(FakeGoogle.clientId)"}"#))
        }
        return tenant
    }

    /// `signInWithIdp` with `postBody` (form-encoded `fields`) unless `requestUri` carries them.
    func signInWithIdp(
        _ tenant: String, _ fields: [(String, String)], requestUri: String = "http://localhost",
        linking idToken: String? = nil, returnIdpCredential: Bool = false, inRequestUri: Bool = false
    ) async throws -> Answer {
        let form = FormURLEncoded.encode(fields)
        var body: [String: JSONValue] = [
            "tenantId": .string(tenant), "returnSecureToken": .bool(true),
            "requestUri": .string(inRequestUri ? requestUri + "?" + form : requestUri),
        ]
        if !inRequestUri { body["postBody"] = .string(form) }
        if let idToken { body["idToken"] = .string(idToken) }
        if returnIdpCredential { body["returnIdpCredential"] = .bool(true) }
        let json = String(decoding: try JSONEncoder().encode(JSONValue.object(body)), as: UTF8.self)
        return try await client.post("/v1/accounts:signInWithIdp", json)
    }

    func googleSignIn(_ tenant: String, sub: String, _ claims: [String: JSONValue] = [:]) async throws -> JSONValue {
        let token = try FakeGoogle.idToken(sub: sub, claims)
        return try expectOK(try await signInWithIdp(tenant, [("providerId", "google.com"), ("id_token", token)]))
    }

    func passwordSignUp(_ tenant: String, _ email: String) async throws -> JSONValue {
        try expectOK(
            try await client.post(
                "/v1/accounts:signUp",
                #"{"tenantId":"\#(tenant)","email":"\#(email)","password":"notasecret","returnSecureToken":true}"#))
    }

    /// The admin's view of one user of `tenant`.
    func user(_ tenant: String, _ localId: JSONValue?) async throws -> JSONValue {
        let id = try #require(localId?.stringValue)
        return try #require(try await directory.lookupUsers(tenant, [id]).first)
    }

    /// Email enumeration protection off, so that `createAuthUri` says what an email signs in with.
    func disableEmailPrivacy() async throws {
        try expectOK(
            try await directory.admin.request(
                .patch,
                "/v2/projects/\(InProcess.projectID)/config?updateMask=emailPrivacyConfig.enableImprovedEmailPrivacy",
                body: #"{"emailPrivacyConfig":{"enableImprovedEmailPrivacy":false}}"#))
    }

    func createAuthUri(_ tenant: String, _ identifier: String, sessionId: String? = nil) async throws -> JSONValue {
        let session = sessionId.map { #","sessionId":"\#($0)""# } ?? ""
        return try expectOK(
            try await client.post(
                "/v1/accounts:createAuthUri",
                #"{"tenantId":"\#(tenant)","identifier":"\#(identifier)","continueUri":"http://example.com/"\#(session)}"#
            ))
    }
}

func providerIds(_ user: JSONValue) -> Set<String> {
    Set((user["providerUserInfo"]?.arrayValue ?? []).compactMap { $0["providerId"]?.stringValue })
}

func strings(_ value: JSONValue?) -> Set<String> { Set((value?.arrayValue ?? []).compactMap(\.stringValue)) }

/// Federated sign-in as the emulator's `idp.spec.ts` and `createAuthUri.spec.ts` describe it (issue 36),
/// with signed tokens.
@Suite("in-process: federated sign-in (idp.spec.ts, createAuthUri.spec.ts)", .enabled(if: PostgresSupport.available))
struct InProcessFederatedTests {
    static func sub() -> String { "sub-" + Secrets.randomAlphanumeric(12) }

    // idp.spec.ts:212 — the credential's parameters in requestUri, no postBody.
    @Test("providerId and id_token in requestUri, without postBody, sign in")
    func credentialInRequestUri() async throws {
        try await FakeGoogle.withTokenService { service in
            let tenant = try await service.federatedTenant()
            let sub = Self.sub()
            let token = try FakeGoogle.idToken(sub: sub)
            let data = try expectOK(
                try await service.signInWithIdp(
                    tenant, [("providerId", "google.com"), ("id_token", token)], returnIdpCredential: true,
                    inRequestUri: true))
            #expect(data["providerId"]?.stringValue == "google.com")
            #expect(data["federatedId"]?.stringValue == "https://accounts.google.com/\(sub)")
            // postBody wins over the query (a redirect's requestUri may carry the app's own parameters).
            let other = try FakeGoogle.idToken(sub: Self.sub())
            let body: [String: JSONValue] = [
                "tenantId": .string(tenant), "requestUri": .string("http://localhost?id_token=junk&providerId=x.com"),
                "postBody": .string("providerId=google.com&id_token=\(other)"),
            ]
            let json = String(decoding: try JSONEncoder().encode(JSONValue.object(body)), as: UTF8.self)
            try expectOK(try await service.client.post("/v1/accounts:signInWithIdp", json))
        }
    }

    // idp.spec.ts:439 — needConfirmation through requestUri: the account is not touched. Tessera leaves
    // the account's localId out of the answer (docs/design-notes.md, "Federated providers").
    @Test("an untrusted sign-in by requestUri meeting another account's email needs confirmation")
    func needConfirmationThroughRequestUri() async throws {
        try await FakeGoogle.withTokenService { service in
            let tenant = try await service.federatedTenant()
            let email = InProcess.uniqueEmail("bar")
            let first = try await service.googleSignIn(
                tenant, sub: Self.sub(),
                ["email": .string(email), "email_verified": .bool(false), "name": .string("Bar")])
            let apple = try FakeGoogle.idToken(
                sub: Self.sub(), issuer: "https://appleid.apple.com",
                ["email": .string(email), "email_verified": .bool(false), "name": .string("Foo")])
            let data = try expectOK(
                try await service.signInWithIdp(
                    tenant, [("providerId", "apple.com"), ("id_token", apple)], returnIdpCredential: true,
                    inRequestUri: true))
            #expect(data["needConfirmation"]?.boolValue == true, "\(data)")
            #expect(data["idToken"] == nil && data["localId"] == nil, "\(data)")
            #expect(strings(data["verifiedProvider"]) == ["google.com"])
            let user = try await service.user(tenant, first["localId"])
            #expect(providerIds(user) == ["google.com"])
            #expect(user["emailVerified"]?.boolValue == false && user["displayName"]?.stringValue == "Bar")
        }
    }

    // idp.spec.ts:516 — a credential that does not name its provider.
    @Test("a credential without providerId is INVALID_CREDENTIAL_OR_PROVIDER_ID")
    func missingProviderId() async throws {
        try await FakeGoogle.withTokenService { service in
            let tenant = try await service.federatedTenant()
            let token = try FakeGoogle.idToken(sub: Self.sub())
            let answer = try await service.signInWithIdp(tenant, [("id_token", token)])
            try expectError(answer, "INVALID_CREDENTIAL_OR_PROVIDER_ID")
            let message = answer.json?["error"]?["message"]?.stringValue ?? ""
            #expect(message.hasPrefix("INVALID_CREDENTIAL_OR_PROVIDER_ID : Invalid IdP response/credential:"))
            #expect(!message.contains(token), "the credential is never echoed")
            try expectError(
                try await service.signInWithIdp(tenant, [], inRequestUri: true), "INVALID_CREDENTIAL_OR_PROVIDER_ID")
            #expect(try await service.directory.lookupUsers(tenant, []).isEmpty)
        }
    }

    // idp.spec.ts:38/154 — Google's rawUserInfo is Google's user-info shape; idp.spec.ts:233 — the
    // token's screen_name is the user's screen name at the provider.
    @Test("Google's rawUserInfo has id and verified_email; a name-less token gives no displayName")
    func googleRawUserInfo() async throws {
        try await FakeGoogle.withTokenService { service in
            let tenant = try await service.federatedTenant()
            let sub = Self.sub()
            let email = InProcess.uniqueEmail("ada")
            let bare = try await service.googleSignIn(
                tenant, sub: sub, ["email": .string(email), "email_verified": .bool(true), "locale": .string("en")])
            #expect(bare["displayName"] == nil && bare["photoUrl"] == nil, "\(bare)")
            let raw = try #require(bare["rawUserInfo"]?.stringValue, "rawUserInfo is a JSON string")
            let info = try JSONDecoder().decode(JSONValue.self, from: Data(raw.utf8))
            #expect(info["id"]?.stringValue == sub && info["email"]?.stringValue == email, "\(raw)")
            #expect(info["verified_email"]?.boolValue == true && info["locale"]?.stringValue == "en", "\(raw)")
            #expect(info["sub"] == nil && info["iss"] == nil && info["aud"] == nil, "\(raw)")

            let named = try await service.googleSignIn(
                tenant, sub: Self.sub(),
                [
                    "name": .string("Ada Lovelace"), "given_name": .string("Ada"), "family_name": .string("Lovelace"),
                    "picture": .string("http://localhost/ada.png"), "screen_name": .string("countess"),
                ])
            #expect(
                named["displayName"]?.stringValue == "Ada Lovelace" && named["fullName"]?.stringValue == "Ada Lovelace")
            #expect(named["firstName"]?.stringValue == "Ada" && named["lastName"]?.stringValue == "Lovelace")
            #expect(named["screenName"]?.stringValue == "countess", "\(named)")
            let namedRaw = try #require(named["rawUserInfo"]?.stringValue)
            let namedInfo = try JSONDecoder().decode(JSONValue.self, from: Data(namedRaw.utf8))
            #expect(namedInfo["name"]?.stringValue == "Ada Lovelace" && namedInfo["given_name"]?.stringValue == "Ada")
            #expect(namedInfo["family_name"]?.stringValue == "Lovelace", "\(namedRaw)")
            #expect(namedInfo["picture"]?.stringValue == "http://localhost/ada.png", "\(namedRaw)")
            let user = try await service.user(tenant, named["localId"])
            #expect(user["providerUserInfo"]?[0]?["screenName"]?.stringValue == "countess", "\(user)")
            #expect(user["screenName"]?.stringValue == "countess", "the user's own screenName: \(user)")
            #expect(user["photoUrl"]?.stringValue == "http://localhost/ada.png")
        }
    }

    // idp.spec.ts:787 — a provider identity linked to one user cannot be linked to another; idp.spec.ts:760
    // — nor again to its own user (an HTTP 200 errorMessage with returnIdpCredential).
    @Test("linking an identity linked elsewhere is FEDERATED_USER_ID_ALREADY_LINKED and changes nothing")
    func alreadyLinked() async throws {
        try await FakeGoogle.withTokenService { service in
            let tenant = try await service.federatedTenant()
            let sub = Self.sub()
            let claims: [String: JSONValue] = [
                "email": .string(InProcess.uniqueEmail("alice")), "email_verified": .bool(false),
            ]
            let owner = try await service.googleSignIn(tenant, sub: sub, claims)
            let other = try await service.passwordSignUp(tenant, InProcess.uniqueEmail("foo"))
            let token = try FakeGoogle.idToken(sub: sub, claims)
            let credential = [("providerId", "google.com"), ("id_token", token)]
            try expectError(
                try await service.signInWithIdp(tenant, credential, linking: other["idToken"]?.stringValue),
                "FEDERATED_USER_ID_ALREADY_LINKED")
            #expect(providerIds(try await service.user(tenant, other["localId"])) == ["password"])
            #expect(providerIds(try await service.user(tenant, owner["localId"])) == ["google.com"])

            let again = try expectOK(
                try await service.signInWithIdp(
                    tenant, credential, linking: owner["idToken"]?.stringValue, returnIdpCredential: true))
            #expect(again["errorMessage"]?.stringValue == "FEDERATED_USER_ID_ALREADY_LINKED", "\(again)")
            #expect(again["localId"] == nil && again["refreshToken"] == nil, "\(again)")
            #expect(again["oauthIdToken"]?.stringValue == token)
        }
    }

    // idp.spec.ts:823 — linking an identity whose email is another account's is EMAIL_EXISTS, whether
    // or not the provider is trusted for it: a link never takes another account over.
    @Test("linking an identity whose email another account has is EMAIL_EXISTS and changes nothing")
    func linkEmailExists() async throws {
        try await FakeGoogle.withTokenService { service in
            let tenant = try await service.federatedTenant()
            for (email, verified) in [(InProcess.uniqueEmail("alice"), false), ("a\(Self.sub())@gmail.com", true)] {
                let existing = try await service.passwordSignUp(tenant, email)
                let anonymous = try await service.signUpAnonymous(tenant)
                let token = try FakeGoogle.idToken(
                    sub: Self.sub(), ["email": .string(email), "email_verified": .bool(verified)])
                try expectError(
                    try await service.signInWithIdp(
                        tenant, [("providerId", "google.com"), ("id_token", token)], linking: anonymous.idToken),
                    "EMAIL_EXISTS")
                let user = try await service.user(tenant, .string(anonymous.localId))
                #expect(providerIds(user).isEmpty && user["email"] == nil, "\(user)")
                #expect(providerIds(try await service.user(tenant, existing["localId"])) == ["password"])
            }
        }
    }

    // idp.spec.ts:850 — linking a provider that vouches for the account's own email verifies it. Tessera
    // takes Google's word for Google's own domains only (docs/design-notes.md, "Federated providers"):
    // the emulator's example.com address stays unverified here.
    @Test("a link whose provider vouches for the account's email verifies it; Google only for its domains")
    func linkVerifiesEmail() async throws {
        try await FakeGoogle.withTokenService { service in
            let tenant = try await service.federatedTenant()
            for (email, verifies) in [
                ("a\(Self.sub().lowercased())@gmail.com", true), (InProcess.uniqueEmail(), false),
            ] {
                let account = try await service.passwordSignUp(tenant, email)
                let token = try FakeGoogle.idToken(
                    sub: Self.sub(), ["email": .string(email), "email_verified": .bool(true)])
                let linked = try expectOK(
                    try await service.signInWithIdp(
                        tenant, [("providerId", "google.com"), ("id_token", token)],
                        linking: account["idToken"]?.stringValue))
                #expect(linked["localId"] == account["localId"])
                let user = try await service.user(tenant, account["localId"])
                #expect(user["emailVerified"]?.boolValue == verifies, "\(email): \(user)")
                #expect(providerIds(user) == ["password", "google.com"])
            }
        }
    }

    // idp.spec.ts:369/402 expect Google to join (and take over) an account by an example.com email.
    // Tessera trusts Google for Google's own domains only (docs/design-notes.md, "Federated providers"):
    // needConfirmation, and the account keeps its password.
    @Test("Google does not join an account by an address outside Google's domains")
    func googleTrustedOnlyForItsDomains() async throws {
        try await FakeGoogle.withTokenService { service in
            let tenant = try await service.federatedTenant()
            let email = InProcess.uniqueEmail("foo")
            let account = try await service.passwordSignUp(tenant, email)
            let token = try FakeGoogle.idToken(
                sub: Self.sub(), ["email": .string(email), "email_verified": .bool(true)])
            let data = try expectOK(
                try await service.signInWithIdp(tenant, [("providerId", "google.com"), ("id_token", token)]))
            #expect(data["needConfirmation"]?.boolValue == true && data["idToken"] == nil, "\(data)")
            let user = try await service.user(tenant, account["localId"])
            #expect(providerIds(user) == ["password"] && user["emailVerified"]?.boolValue == false, "\(user)")
        }
    }

    // createAuthUri.spec.ts:91 — the app's sessionId comes back.
    @Test("createAuthUri echoes the sessionId it was given")
    func createAuthUriEchoesSessionId() async throws {
        try await InProcess.withTokenService { service in
            let tenant = try await service.federatedTenant([])
            let given = try await service.createAuthUri(tenant, InProcess.uniqueEmail(), sessionId: "my-session-1")
            #expect(given["sessionId"]?.stringValue == "my-session-1", "\(given)")
            let made = try await service.createAuthUri(tenant, InProcess.uniqueEmail())
            #expect(made["sessionId"]?.stringValue?.isEmpty == false)
            // Under email enumeration protection too.
            #expect(
                try await service.createAuthUri(tenant, InProcess.uniqueEmail(), sessionId: "s-2")["sessionId"]
                    == .string("s-2"))
        }
    }

    /// An account whose email is `email` with a password, and a Google link under `emailAtProvider`
    /// (createAuthUri.spec.ts's setup; the emulator adds the email by an email link).
    static func accountWithProviderEmail(_ service: TokenHarness, _ tenant: String) async throws
        -> (email: String, emailAtProvider: String)
    {
        let email = InProcess.uniqueEmail("bob")
        let emailAtProvider = InProcess.uniqueEmail("alice")
        let signedIn = try await service.googleSignIn(tenant, sub: Self.sub(), ["email": .string(emailAtProvider)])
        let localId = try #require(signedIn["localId"]?.stringValue)
        try expectOK(
            try await service.directory.admin.post(
                service.directory.accountsPath(tenant, "update"),
                #"{"localId":"\#(localId)","email":"\#(email)","password":"notasecret"}"#))
        return (email, emailAtProvider)
    }

    // createAuthUri.spec.ts:120 — an email is found as the account's or as a linked provider's.
    @Test("createAuthUri finds an account by its own email or a linked provider's")
    func createAuthUriByProviderEmail() async throws {
        try await FakeGoogle.withTokenService { service in
            try await service.disableEmailPrivacy()
            let tenant = try await service.federatedTenant()
            let (email, emailAtProvider) = try await Self.accountWithProviderEmail(service, tenant)
            for identifier in [email, emailAtProvider.uppercased()] {
                let data = try await service.createAuthUri(tenant, identifier)
                #expect(data["registered"]?.boolValue == true, "\(identifier): \(data)")
                #expect(strings(data["allProviders"]) == ["password", "google.com"], "\(data)")
                #expect(strings(data["signinMethods"]) == ["password", "google.com"], "\(data)")
            }
        }
    }

    // createAuthUri.spec.ts:154 — with duplicate emails a provider's email names no account's
    // provider: only the password methods of an account that has an email.
    @Test("with allowDuplicateEmails createAuthUri lists no provider sign-in methods")
    func createAuthUriDuplicateEmails() async throws {
        try await FakeGoogle.withTokenService { service in
            try await service.disableEmailPrivacy()
            let tenant = try await service.federatedTenant()
            let (email, emailAtProvider) = try await Self.accountWithProviderEmail(service, tenant)
            try expectOK(
                try await service.directory.admin.request(
                    .patch, "/v2/projects/\(InProcess.projectID)/config?updateMask=signIn.allowDuplicateEmails",
                    body: #"{"signIn":{"allowDuplicateEmails":true}}"#))
            for identifier in [email, emailAtProvider] {
                let data = try await service.createAuthUri(tenant, identifier)
                #expect(data["registered"]?.boolValue == true, "\(identifier): \(data)")
                #expect(strings(data["allProviders"]) == ["password"], "\(data)")
                #expect(strings(data["signinMethods"]) == ["password"], "\(data)")
            }
        }
    }

    // idp.spec.ts:347 — the provider's current email names its sign-in method, the account's email stays.
    @Test("a provider's new email is a sign-in method's email; the account keeps its own")
    func providerEmailSignInMethods() async throws {
        try await FakeGoogle.withTokenService { service in
            try await service.disableEmailPrivacy()
            let tenant = try await service.federatedTenant()
            let (email, newEmail, sub) = (InProcess.uniqueEmail("foo"), InProcess.uniqueEmail("bar"), Self.sub())
            _ = try await service.googleSignIn(tenant, sub: sub, ["email": .string(email)])
            #expect(strings(try await service.createAuthUri(tenant, email)["signinMethods"]) == ["google.com"])
            let again = try await service.googleSignIn(tenant, sub: sub, ["email": .string(newEmail)])
            #expect(strings(try await service.createAuthUri(tenant, newEmail)["signinMethods"]) == ["google.com"])
            #expect(try await service.user(tenant, again["localId"])["email"]?.stringValue == email)
        }
    }
}
