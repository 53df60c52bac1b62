import Crypto
import Foundation
import Logging
import PostgresNIO
import Testing
import _CryptoExtras

@testable import TesseraShared
@testable import TokenService
@testable import UserDirectory

@Suite("federated providers: trust, OAuth 1.0a, key sets")
struct FederatedUnitTests {
    /// docs/protocol/accounts.md#verified-email-and-automatic-linking
    @Test("the trusted (provider, domain) table of automatic linking")
    func trustTable() {
        func trusted(_ provider: String, _ email: String, _ verified: Bool? = true, _ domains: [String] = []) -> Bool {
            FederatedProviders.isTrusted(
                providerId: provider, email: email, providerSaysVerified: verified, configuredDomains: domains)
        }
        #expect(trusted("google.com", "a@gmail.com"))
        #expect(!trusted("google.com", "a@example.com"))
        #expect(!trusted("google.com", "a@gmail.com", false))
        #expect(trusted("yahoo.com", "a@yahoo.com"))
        #expect(trusted("microsoft.com", "a@outlook.com") && trusted("microsoft.com", "a@hotmail.com"))
        #expect(!trusted("microsoft.com", "a@live.example"))
        #expect(trusted("apple.com", "x@privaterelay.appleid.com") && trusted("apple.com", "a@example.com", nil))
        for untrusted in ["facebook.com", "github.com", "twitter.com"] {
            #expect(!trusted(untrusted, "a@gmail.com"))
        }
        // A scope's OIDC provider: only its configured domains, and only when it says verified.
        #expect(trusted("oidc.acme", "a@acme.test", true, ["acme.test"]))
        #expect(!trusted("oidc.acme", "a@acme.test", nil, ["acme.test"]))
        #expect(!trusted("oidc.acme", "a@other.test", true, ["acme.test"]))
        #expect(trusted("oidc.acme", "a@other.test", true, ["*"]))
        #expect(!trusted("oidc.acme", "a@acme.test", true))
    }

    @Test("provider ids: built-ins and oidc.*")
    func providerIDs() {
        #expect(FederatedProviders.kind(of: "google.com") == .oidc)
        #expect(FederatedProviders.kind(of: "github.com") == .oauth)
        #expect(FederatedProviders.kind(of: "oidc.acme-1") == .oidc)
        #expect(FederatedProviders.kind(of: "oidc.") == nil)
        #expect(FederatedProviders.kind(of: "oidc.a/b") == nil)
        #expect(FederatedProviders.kind(of: "saml.x") == nil)
        #expect(FederatedProviders.kind(of: "example.com") == nil)
    }

    @Test("OAuth 1.0a signature: Twitter's published example")
    func oauth1Vector() {
        // https://developer.twitter.com/en/docs/authentication/oauth-1-0a/creating-a-signature
        let header = OAuth1.authorization(
            method: "POST", url: "https://api.twitter.com/1.1/statuses/update.json",
            query: [("include_entities", "true"), ("status", "Hello Ladies + Gentlemen, a signed OAuth request!")],
            consumerKey: "xvz1evFS4wEEPTGEFPHBog", consumerSecret: "kAcSOqF21Fu85e7zjz7ZN2U4ZRhfV3WpwPAoE3Z7kBw",
            token: "370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb",
            tokenSecret: "LswwdoUaIvS8ltyTt5jkRh4J50vUPVVHtR2YPi5kE",
            nonce: "kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg", timestamp: 1_318_622_958)
        #expect(header.contains("oauth_signature=\"hCtSmYh%2BiHYCEqBWrE7C7hYmtUk%3D\""))
        #expect(header.hasPrefix("OAuth oauth_consumer_key=\"xvz1evFS4wEEPTGEFPHBog\""))
    }

    @Test("postBody is form-decoded")
    func postBody() throws {
        let credential = try ProviderCredential(postBody: "id_token=a.b.c&providerId=google.com&nonce=n%2Bx+y")
        #expect(credential.providerId == "google.com" && credential.idToken == "a.b.c")
        #expect(credential.nonce == "n+x y")
        #expect(throws: FirebaseError.self) { try ProviderCredential(postBody: "id_token=a.b.c") }
    }

    @Test("JWKS: RSA and P-256 signing keys are read, encryption keys and junk skipped")
    func jwksParse() throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048).publicKey
        let ec = P256.Signing.PrivateKey().publicKey
        let primitives = try rsa.getKeyPrimitives()
        let n = Base64URL.encode(primitives.modulus)
        let e = Base64URL.encode(primitives.publicExponent)
        let raw = ec.rawRepresentation
        let document = """
            {"keys":[{"kty":"RSA","kid":"r1","n":"\(n)","e":"\(e)","alg":"RS256","use":"sig"},
            {"kty":"EC","crv":"P-256","kid":"e1","x":"\(Base64URL.encode(raw.prefix(32)))","y":"\(Base64URL.encode(raw.suffix(32)))"},
            {"kty":"RSA","kid":"enc","n":"\(n)","e":"\(e)","use":"enc"},
            {"kty":"oct","kid":"h1","k":"c2VjcmV0"}]}
            """
        let keys = try JWKSCache.parse(Data(document.utf8))
        #expect(Set(keys.keys) == ["r1", "e1"])
        #expect(throws: FirebaseError.self) { try JWKSCache.parse(Data("{}".utf8)) }
    }

    @Test("issuer matching, Microsoft's per-tenant issuer included")
    func issuers() {
        let google = ProviderEndpoints.defaults["google.com"]!
        #expect(google.accepts(issuer: "https://accounts.google.com", tid: nil))
        #expect(google.accepts(issuer: "accounts.google.com", tid: nil))
        #expect(!google.accepts(issuer: "https://evil.example", tid: nil))
        let microsoft = ProviderEndpoints.defaults["microsoft.com"]!
        #expect(microsoft.accepts(issuer: "https://login.microsoftonline.com/9188040d-6c67/v2.0", tid: "9188040d-6c67"))
        #expect(!microsoft.accepts(issuer: "https://login.microsoftonline.com/other/v2.0", tid: "9188040d-6c67"))
        #expect(!microsoft.accepts(issuer: "https://login.microsoftonline.com/{tenantid}/v2.0", tid: nil))
    }
}

@Suite("where a tenant's identity provider may be reached")
struct EgressPolicyTests {
    @Test("public addresses pass; loopback, private, link-local, mapped and reserved ones only when allowed")
    func addresses() async throws {
        let policy = try EgressPolicy(parsing: "127.0.0.1:8080, 10.1.0.0/16, [::1]:9000")
        #expect(policy.allowed.count == 3)
        let logger = Logger(label: "test")
        for ok in ["https://93.184.215.14/", "http://127.0.0.1:8080/", "https://10.1.2.3/", "http://[::1]:9000/"] {
            let url = try #require(WebURL(ok))
            _ = try await policy.address(for: url, logger: logger)
        }
        for refused in [
            "http://127.0.0.1:8081/", "https://127.1/", "https://2130706433/", "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:7f00:1]/", "https://169.254.169.254/", "https://10.2.0.1/", "https://[fd00:ec2::254]/",
            "https://100.64.0.1/", "https://0.0.0.0/", "https://224.0.0.1/", "https://[fe80::1]/", "http://[::1]:9001/",
            "http://localhost:8081/",
        ] {
            let url = try #require(WebURL(refused))
            await #expect(throws: FirebaseError.self, "\(refused)") {
                try await policy.address(for: url, logger: logger)
            }
        }
        #expect(await policy.allowsPlainHTTP(try #require(WebURL("http://127.0.0.1:8080/jwks"))))
        #expect(!(await policy.allowsPlainHTTP(try #require(WebURL("http://169.254.169.254/jwks")))))
        #expect(throws: ConfigError.self) { try EgressPolicy(parsing: "localhost:8080") }
        // A name that does not resolve is a provider that cannot be reached (503), not a refusal.
        do {
            _ = try await policy.address(for: try #require(WebURL("https://no-such-host.invalid/")), logger: logger)
            Issue.record("an unresolvable name was given an address")
        } catch let error as FirebaseError {
            #expect(error.code == "UNAVAILABLE", "\(error)")
        }
    }
}

@Suite("federated sign-in on a real PostgreSQL", .enabled(if: PostgresSupport.available))
struct FederatedPostgresTests {
    let logger = PostgresSupport.logger
    static let hasher = PasswordHasher(pool: HashingPool(threads: 2, queueLength: 64), rounds: 8, memCost: 8)

    func setUp(_ client: Database) async throws -> Accounts {
        let tenants = PostgresTenantStore(client: client, anonymousRetention: .seconds(3600))
        _ = try await tenants.create(ScopeSettings(scope: Scope(wire: "t1"), displayName: "t1"), logger: logger)
        for provider in ["google.com", "facebook.com"] {
            try await IdpConfigStore(client: client).create(
                scope: Scope(wire: "t1"), IdpConfig(providerId: provider, enabled: true, clientId: "client"),
                logger: logger)
        }
        return Accounts(client: client, anonymousRetention: .seconds(3600), hasher: Self.hasher)
    }

    func request(_ identity: FederatedIdentity, linkTo: String? = nil) -> SignInWithIdpRequest {
        SignInWithIdpRequest(
            scope: Scope(wire: "t1"), identity: identity, linkTo: linkTo,
            session: NewSession(
                refreshTokenHash: UUID().uuidString, expiresAt: Int64(Date().timeIntervalSince1970) + 60))
    }

    @Test("concurrent first sign-ins of one identity create exactly one user")
    func concurrentFirstSignIn() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = try await setUp(client)
            let identity = FederatedIdentity(
                providerId: "google.com", rawId: "sub-1", email: "racer@gmail.com", emailVerified: true)
            let answers = try await withThrowingTaskGroup(of: SignInWithIdpResponse.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await accounts.federated.signInWithIdp(request(identity), logger: logger) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(answers.compactMap { $0.user?.localId }).count == 1)
            #expect(answers.filter(\.isNewUser).count == 1)
            let count = try await client.query("SELECT count(*) FROM users WHERE tenant_id = 't1'", logger: logger)
            for try await n in count.decode(Int.self) { #expect(n == 1) }
        }
    }

    @Test("an untrusted provider never joins an existing account; a trusted one takes an unverified one over")
    func trustDecisions() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let accounts = try await setUp(client)
            let facebook = FederatedIdentity(providerId: "facebook.com", rawId: "fb-1", email: "pat@gmail.com")
            let created = try await accounts.federated.signInWithIdp(request(facebook), logger: logger)
            #expect(created.isNewUser && created.user?.emailVerified == false)
            let localId = try #require(created.user?.localId)

            // Another untrusted sign-in with the same email: needConfirmation, nothing written.
            let facebook2 = FederatedIdentity(providerId: "facebook.com", rawId: "fb-2", email: "pat@gmail.com")
            let refused = try await accounts.federated.signInWithIdp(request(facebook2), logger: logger)
            #expect(refused.outcome == .needConfirmation && refused.user == nil)
            #expect(refused.verifiedProvider == ["facebook.com"])

            // Google for @gmail.com takes the account over: facebook unlinked, email verified.
            let google = FederatedIdentity(
                providerId: "google.com", rawId: "g-1", email: "pat@gmail.com", emailVerified: true, displayName: "Pat")
            let taken = try await accounts.federated.signInWithIdp(request(google), logger: logger)
            #expect(taken.outcome == .signedIn && taken.user?.localId == localId && !taken.isNewUser)
            #expect(taken.user?.providerUserInfo.map(\.providerId) == ["google.com"])
            #expect(taken.user?.emailVerified == true && taken.user?.displayName == "Pat")

            // The same identity again is FEDERATED_USER_ID_ALREADY_LINKED when linked elsewhere.
            await expectFirebaseError("FEDERATED_USER_ID_ALREADY_LINKED") {
                _ = try await accounts.federated.signInWithIdp(request(google, linkTo: localId), logger: logger)
            }
        }
    }
}
