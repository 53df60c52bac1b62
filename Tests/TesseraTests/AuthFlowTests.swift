import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import TesseraShared
@testable import TokenService
@testable import UserDirectory

@Suite("authorization flows: state, answers, handler callbacks, Apple's client secret")
struct AuthFlowUnitTests {
    @Test("a state carries 256 random bits and its scope, and only a state of that form names a scope")
    func stateNamesItsScope() throws {
        let project = AuthorizationFlows.newState(scope: .project)
        #expect(project.count == 43 && AuthorizationFlows.scope(ofState: project) == .project)
        let tenant = AuthorizationFlows.newState(scope: Scope(wire: "acme-1"))
        #expect(AuthorizationFlows.scope(ofState: tenant) == Scope(wire: "acme-1"))
        #expect(AuthorizationFlows.newState(scope: .project) != project, "random")
        for malformed in [
            "", "short", project + ".", project + ".!!", String(repeating: "a", count: 44),
            project + "." + Base64URL.encode(Array("a".utf8)) + ".x", String(repeating: "a", count: 600),
        ] {
            #expect(AuthorizationFlows.scope(ofState: malformed) == nil, "\(malformed.prefix(50))")
        }
    }

    @Test("the provider's answer: the requestUri's query and the posted fields, postBody winning")
    func answerMergesQueryAndPostBody() throws {
        let answer = try AuthorizationFlows.Answer(
            requestUri: "https://auth.example/__/auth/handler?code=q&state=s1#frag", postBody: "code=p&user=%7B%7D")
        #expect(answer.base == "https://auth.example/__/auth/handler")
        #expect(answer.fields == ["code": "p", "state": "s1", "user": "{}"])
        #expect(answer.isFlowAnswer)
        let credential = try AuthorizationFlows.Answer(
            requestUri: "http://localhost", postBody: "providerId=google.com&id_token=x")
        #expect(!credential.isFlowAnswer, "a credential the app holds is not a flow's answer")
        #expect(throws: FirebaseError.self) {
            try AuthorizationFlows.Answer(requestUri: "app://x?state=1", postBody: nil)
        }
        #expect(throws: FirebaseError.self) {
            try AuthorizationFlows.Answer(requestUri: "https://a.example/?state=%zz", postBody: nil)
        }
    }

    @Test("a requestUri matches its flow's continueUri by scheme, host, port and path")
    func sameResource() {
        let handler = "https://auth.example/__/auth/handler"
        #expect(AuthorizationFlows.sameResource(handler + "?code=1&state=2", handler))
        #expect(AuthorizationFlows.sameResource("HTTPS://Auth.Example:443/__/auth/handler#x", handler))
        #expect(!AuthorizationFlows.sameResource("https://auth.example/__/auth/handler2", handler))
        #expect(!AuthorizationFlows.sameResource("http://auth.example/__/auth/handler", handler))
        #expect(!AuthorizationFlows.sameResource("https://auth.example:8443/__/auth/handler", handler))
        #expect(!AuthorizationFlows.sameResource("https://evil.example/__/auth/handler", handler))
        #expect(!AuthorizationFlows.sameResource("not a url", handler))
    }

    @Test("a URL's path, query and fragment, as serialized")
    func webURLParts() throws {
        let url = try #require(WebURL("HTTPS://App.Example:443/a/b?x=1&y=%20#frag?no"))
        #expect(url.path == "/a/b" && url.query == "x=1&y=%20" && url.fragment == "frag?no")
        #expect(url.resource == "https://app.example/a/b")
        let bare = try #require(WebURL("http://localhost:3000"))
        #expect(bare.path == "/" && bare.query == nil && bare.fragment == nil)
        let hashed = try #require(WebURL("http://localhost/#/finish?state=1"))
        #expect(hashed.query == nil && hashed.fragment == "/finish?state=1")
    }

    @Test("scopes: the provider's defaults first, the app's added once")
    func scopes() {
        #expect(
            AuthorizationFlows.scopes("google.com", requested: ["profile", "https://x/drive"])
                == "openid email profile https://x/drive")
        #expect(AuthorizationFlows.scopes("github.com", requested: []) == "read:user user:email")
        #expect(AuthorizationFlows.scopes("apple.com", requested: ["", "email"]) == "name email")
    }

    @Test("the Apple SDK's deep link decodes, as its parser does, to authType, eventId and the link")
    func appleDeepLink() throws {
        var client = AuthFlowClient(platform: .ios, authType: "signInWithRedirect")
        client.eventId = "ABCDEFGHIJ"
        client.callbackScheme = "com.googleusercontent.apps.123"
        let link = "https://auth.example/__/auth/handler?code=a%2Bb&state=s&user=%7B%22n%22%3A1%7D"
        let deepLink = AuthHandlerController.appURL(
            client, base: "https://auth.example/__/auth/handler", answer: ("link", link))
        let prefix = "com.googleusercontent.apps.123://firebaseauth/link?deep_link_id="
        #expect(deepLink.hasPrefix(prefix))
        // AuthWebUtils.dictionary(withHttpArgumentsString:): `+` to space, then percent-decoding.
        func decode(_ text: Substring) -> String {
            text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
        }
        let inner = decode(deepLink.dropFirst(prefix.count))
        #expect(inner.hasPrefix("https://auth.example/__/auth/callback?"))
        var fields: [String: String] = [:]
        for pair in inner.split(separator: "?", maxSplits: 1)[1].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            fields[decode(parts[0])] = decode(parts[1])
        }
        #expect(fields == ["authType": "signInWithRedirect", "eventId": "ABCDEFGHIJ", "link": link])
    }

    @Test("the Android SDK's intent names GenericIdpActivity's scheme and host, the package and unencrypted extras")
    func androidIntent() {
        var client = AuthFlowClient(platform: .android, authType: "signInWithRedirect")
        client.eventId = "6f1c-42"
        client.androidPackage = "com.example.app"
        let intent = AuthHandlerController.appURL(
            client, base: "https://auth.example/__/auth/handler",
            answer: ("link", "https://auth.example/__/auth/handler?code=1&state=2"))
        #expect(
            intent
                == "intent://firebase.auth/#Intent;scheme=genericidp;package=com.example.app;S.authType=signInWithRedirect;"
                + "S.eventId=6f1c-42;S.link=https%3A%2F%2Fauth.example%2F__%2Fauth%2Fhandler%3Fcode%3D1%26state%3D2;"
                + "B.encryptionEnabled=false;end")
    }

    @Test("a refused start reaches a listed mobile app as the firebaseError its SDK reads")
    func appErrors() throws {
        var ios = AuthFlowClient(platform: .ios, authType: "signInWithRedirect")
        ios.eventId = "ABCDEFGHIJ"
        ios.callbackScheme = "app-1-2-ios-3"
        let failure = FirebaseError.invalid(.operationNotAllowed, "off")
        let deepLink = AuthHandlerController.appURL(
            ios, base: "https://auth.example/__/auth/handler",
            answer: ("firebaseError", AuthHandlerController.errorJSON(failure)))
        let prefix = "app-1-2-ios-3://firebaseauth/link?deep_link_id="
        #expect(deepLink.hasPrefix(prefix))
        let inner = try #require(String(deepLink.dropFirst(prefix.count)).removingPercentEncoding)
        let query = try #require(FormURLEncoded.parse(String(inner.split(separator: "?", maxSplits: 1)[1])))
        #expect(query["authType"] == "signInWithRedirect" && query["eventId"] == "ABCDEFGHIJ")
        let error = try JSONDecoder().decode([String: String].self, from: Data((query["firebaseError"] ?? "").utf8))
        #expect(error["code"] == "auth/operation-not-allowed" && error["message"] == "OPERATION_NOT_ALLOWED : off")

        var android = AuthFlowClient(platform: .android, authType: "signInWithRedirect")
        android.eventId = "e-1"
        android.androidPackage = "com.example.app"
        let intent = AuthHandlerController.appURL(
            android, base: "", answer: ("firebaseError", AuthHandlerController.errorJSON(failure)))
        #expect(intent.hasPrefix("intent://firebase.auth/#Intent;scheme=genericidp;package=com.example.app;"))
        #expect(intent.contains(";S.firebaseError=%7B%22") && !intent.contains("S.link=") && intent.hasSuffix(";end"))
    }

    @Test("the relay iframe may be framed by the authorized domains' pages only")
    func frameAncestors() {
        #expect(
            AuthHandlerController.frameAncestors(["localhost", "127.0.0.1", "app.example:8443", "[::1]"])
                == "http://localhost:* https://localhost:* http://*.localhost:* https://*.localhost:* "
                + "http://127.0.0.1:* https://127.0.0.1:* http://app.example:8443 https://app.example:8443")
        #expect(AuthHandlerController.frameAncestors([]) == "'none'")
    }

    @Test("what the handler page delivers cannot end its data block")
    func dataBlockEscapes() {
        let block = AuthHandlerHTML.dataBlock(.object(["redirectUrl": .string("http://localhost/</script><b>&")]))
        #expect(!block.dropLast("</script>".count).contains("</"))
        #expect(block.contains("\\u003c/script\\u003e\\u003cb\\u003e\\u0026"))
    }

    @Test("custom parameters: a JSON object, numbers and booleans as text; anything else refused")
    func customParameters() throws {
        #expect(
            try AuthHandlerController.customParameters(#"{"login_hint":"a@b","max_age":5,"x":true,"n":null}"#)
                == ["login_hint": "a@b", "max_age": "5", "x": "true"])
        #expect(try AuthHandlerController.customParameters(nil) == [:])
        #expect(throws: FirebaseError.self) { try AuthHandlerController.customParameters("[1]") }
        #expect(throws: FirebaseError.self) { try AuthHandlerController.customParameters("{") }
    }

    @Test("Apple's client secret: an ES256 JWT of the team, for the client, to Apple, that the key verifies")
    func appleClientSecret() throws {
        let key = P256.Signing.PrivateKey()
        var config = IdpConfigResponse(
            providerId: "apple.com", clientId: "com.example.web", clientSecret: nil, issuer: nil)
        config.appleCodeFlow = AppleCodeFlow(
            teamId: "TEAM123456", keyId: "KEY1234567", privateKey: key.pemRepresentation)
        let flows = Self.flows()
        let secret = try flows.appleClientSecret(config)
        let payload = try JWS.verifyES256(secret, key: key.publicKey)
        let header = try JWS.header(of: secret)
        #expect(header.alg == "ES256" && header.kid == "KEY1234567")
        let claims = try JSONDecoder().decode([String: JSONValue].self, from: payload)
        #expect(claims["iss"] == .string("TEAM123456") && claims["sub"] == .string("com.example.web"))
        #expect(claims["aud"] == .string("https://appleid.apple.com"))
        let iat = try #require(claims["iat"]?.intValue)
        let exp = try #require(claims["exp"]?.intValue)
        #expect(exp - iat == 300 && abs(iat - Int64(Date().timeIntervalSince1970)) < 5)

        config.appleCodeFlow = nil
        #expect(throws: FirebaseError.self) { try flows.appleClientSecret(config) }
    }

    @Test("Apple's first-login user field names the user where the ID token does not")
    func appleUserField() {
        var profile = ProviderProfile(
            identity: FederatedIdentity(providerId: "apple.com", rawId: "1", email: "a@b.example"), rawUserInfo: "{}")
        AuthorizationFlows.applyAppleUser(#"{"name":{"firstName":"Ada","lastName":"Lovelace"}}"#, to: &profile)
        #expect(
            profile.identity.displayName == "Ada Lovelace" && profile.firstName == "Ada"
                && profile.lastName == "Lovelace")
        var named = ProviderProfile(
            identity: FederatedIdentity(providerId: "apple.com", rawId: "1", displayName: "Set"), rawUserInfo: "{}")
        AuthorizationFlows.applyAppleUser(#"{"name":{"firstName":"Ada"}}"#, to: &named)
        #expect(named.identity.displayName == "Set")
        AuthorizationFlows.applyAppleUser("not json", to: &named)
        #expect(named.identity.displayName == "Set")
    }

    @Test("an authorized domain is a host or host:port; schemes, paths, wildcards and blanks are refused")
    func authorizedDomainForms() throws {
        #expect(ActionLinks.normalizedDomain(" App.Example ") == "app.example")
        #expect(ActionLinks.normalizedDomain("localhost:3000") == "localhost:3000")
        #expect(ActionLinks.normalizedDomain("example.com:80") == "example.com")
        #expect(ActionLinks.normalizedDomain("127.0.0.1") == "127.0.0.1")
        for bad in ["", " ", "https://a.example", "a.example/x", "*.a.example", "a b", "user@a.example"] {
            #expect(ActionLinks.normalizedDomain(bad) == nil, "\(bad)")
        }
        #expect(
            try ProjectConfigWire.checkDomains(["A.example", "a.example", "b.example"]) == ["a.example", "b.example"])
        #expect(throws: FirebaseError.self) { try ProjectConfigWire.checkDomains(["ok.example", "https://x"]) }
    }

    @Test("rate limits stored before idpSignInsPerIpPerHour existed keep their values and get its default")
    func rateLimitsOfAnEarlierVersion() {
        let stored =
            #"{"signUpsPerIpPerHour":3,"passwordSignInsPerAccountPerHour":4,"passwordSignInsPerIpPerHour":5,"oobEmailsPerAccountPerHour":6}"#
        let limits = RateLimitSettings.decode(stored)
        #expect(limits.signUpsPerIpPerHour == 3 && limits.oobEmailsPerAccountPerHour == 6)
        #expect(limits.idpSignInsPerIpPerHour == RateLimitSettings.defaults.idpSignInsPerIpPerHour)
    }

    @Test("Apple's code-flow key: all three parts, a P-256 PEM, apple.com only")
    func appleCodeFlowValidation() throws {
        let pem = P256.Signing.PrivateKey().pemRepresentation
        var config = IdpConfig(providerId: "apple.com", clientId: "c")
        config.appleTeamId = "T"
        config.appleKeyId = "K"
        config.applePrivateKey = pem.replacingOccurrences(of: "\n", with: "\r\n")
        try IdpConfigController.validateAppleCodeFlow(&config)
        #expect(
            config.applePrivateKey == pem.trimmingCharacters(in: .newlines) + "\n", "CRLF from a form is read as LF")
        config.appleKeyId = nil
        #expect(throws: FirebaseError.self) {
            try IdpConfigController.validateAppleCodeFlow(&config)
        }
        config.appleKeyId = "K"
        config.applePrivateKey = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"
        #expect(throws: FirebaseError.self) {
            try IdpConfigController.validateAppleCodeFlow(&config)
        }
        var google = IdpConfig(providerId: "google.com", clientId: "c")
        google.appleTeamId = "T"
        #expect(throws: FirebaseError.self) {
            try IdpConfigController.validateAppleCodeFlow(&google)
        }
    }

    static func flows() -> AuthorizationFlows {
        let http = ProviderHTTP(
            client: .shared, configuration: .init(), timeout: .seconds(1), egress: .open)
        let providers = IdentityProviders(
            endpoints: ProviderEndpoints.defaults, keys: JWKSCache(http: http, refetchInterval: .seconds(1)), http: http
        )
        let directory = DirectoryClient(
            httpClient: .shared, baseURL: "http://127.0.0.1:1", secret: "unused-secret-unused-secret",
            timeout: .seconds(1))
        return AuthorizationFlows(providers: providers, directory: directory, apiKey: "k", lifetime: .seconds(600))
    }
}

@Suite("authorization flows on a real PostgreSQL", .enabled(if: PostgresSupport.available))
struct AuthFlowPostgresTests {
    let logger = PostgresSupport.logger

    static func flow(_ provider: String = "google.com") -> AuthFlow {
        var flow = AuthFlow(
            providerId: provider, sessionHashes: ["s1", "s2"], apiKeyHash: "k",
            continueUri: "https://a/__/auth/handler",
            redirectUri: "https://a/__/auth/handler")
        flow.nonce = "n"
        flow.codeVerifier = "v"
        var client = AuthFlowClient(platform: .web, authType: "signInViaPopup")
        client.eventId = "123"
        client.sessionId = "raw"
        flow.client = client
        return flow
    }

    @Test("a flow is read by its scope and state, consumed once, and never seen from another scope")
    func singleUseWithinItsScope() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let tenants = PostgresTenantStore(client: client, anonymousRetention: .seconds(60))
            _ = try await tenants.create(ScopeSettings(scope: Scope(wire: "one")), logger: logger)
            _ = try await tenants.create(ScopeSettings(scope: Scope(wire: "two")), logger: logger)
            let store = AuthFlowStore(client: client)
            let flow = Self.flow()
            try await store.create(
                CreateAuthFlowRequest(scope: Scope(wire: "one"), stateHash: "h1", flow: flow, ttlSeconds: 60),
                logger: logger)
            #expect(
                try await store.get(AuthFlowRequest(scope: Scope(wire: "one"), stateHash: "h1"), logger: logger) == flow
            )
            await expectFirebaseError("INVALID_IDP_RESPONSE") {
                _ = try await store.consume(AuthFlowRequest(scope: Scope(wire: "two"), stateHash: "h1"), logger: logger)
            }
            await expectFirebaseError("INVALID_IDP_RESPONSE") {
                _ = try await store.get(AuthFlowRequest(scope: .project, stateHash: "h1"), logger: logger)
            }
            let consumed = try await store.consume(
                AuthFlowRequest(scope: Scope(wire: "one"), stateHash: "h1"), logger: logger)
            #expect(consumed == flow)
            await expectFirebaseError("INVALID_IDP_RESPONSE") {
                _ = try await store.consume(AuthFlowRequest(scope: Scope(wire: "one"), stateHash: "h1"), logger: logger)
            }
            // An unknown scope, and a disabled one, start nothing.
            await expectFirebaseError("TENANT_NOT_FOUND") {
                try await store.create(
                    CreateAuthFlowRequest(scope: Scope(wire: "nope"), stateHash: "h2", flow: flow, ttlSeconds: 60),
                    logger: logger)
            }
            _ = try await tenants.update(Scope(wire: "two"), logger: logger) { $0.disableAuth = true }
            await expectFirebaseError("PROJECT_DISABLED") {
                try await store.create(
                    CreateAuthFlowRequest(scope: Scope(wire: "two"), stateHash: "h3", flow: flow, ttlSeconds: 60),
                    logger: logger)
            }
        }
    }

    @Test("two redemptions of one flow at once: exactly one gets it")
    func concurrentConsumption() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let store = AuthFlowStore(client: client)
            try await store.create(
                CreateAuthFlowRequest(scope: .project, stateHash: "race", flow: Self.flow(), ttlSeconds: 60),
                logger: logger)
            let results = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        (try? await store.consume(AuthFlowRequest(scope: .project, stateHash: "race"), logger: logger))
                            != nil
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.filter { $0 }.count == 1)
        }
    }

    @Test("an expired flow cannot be read or consumed, and housekeeping removes it")
    func expiredFlows() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let store = AuthFlowStore(client: client)
            try await store.create(
                CreateAuthFlowRequest(scope: .project, stateHash: "old", flow: Self.flow(), ttlSeconds: 60),
                logger: logger)
            try await store.create(
                CreateAuthFlowRequest(scope: .project, stateHash: "new", flow: Self.flow(), ttlSeconds: 60),
                logger: logger)
            try await client.query(
                "UPDATE auth_flows SET expires_at = now() - interval '1 second' WHERE state_hash = 'old'",
                logger: logger)
            await expectFirebaseError("INVALID_IDP_RESPONSE") {
                _ = try await store.get(AuthFlowRequest(scope: .project, stateHash: "old"), logger: logger)
            }
            await expectFirebaseError("INVALID_IDP_RESPONSE") {
                _ = try await store.consume(AuthFlowRequest(scope: .project, stateHash: "old"), logger: logger)
            }
            try await CleanupStore(client: client, anonymousRetention: .seconds(60)).housekeepOnce(logger: logger)
            let rows = try await client.query("SELECT state_hash FROM auth_flows ORDER BY state_hash", logger: logger)
            var left: [String] = []
            for try await hash in rows.decode(String.self) { left.append(hash) }
            #expect(left == ["new"])
        }
    }

    @Test("the project's authorized domains: the deployment's default until the config sets them")
    func authorizedDomains() async throws {
        try await PostgresSupport.withDatabase { (client: Database) async throws -> Void in
            let domains = AuthorizedDomains(client: client, deploymentDefault: ["localhost"])
            #expect(try await domains.current(logger: logger) == ["localhost"])
            let tenants = PostgresTenantStore(client: client, anonymousRetention: .seconds(60))
            _ = try await tenants.updateProjectConfig(logger: logger) { _, project in
                project.authorizedDomains = ["app.example"]
            }
            #expect(try await domains.current(logger: logger) == ["app.example"])
            #expect(try await tenants.projectConfig(logger: logger).1.authorizedDomains == ["app.example"])
            _ = try await tenants.updateProjectConfig(logger: logger) { _, project in project.authorizedDomains = [] }
            #expect(try await domains.current(logger: logger) == [], "an empty list authorizes nothing")
            _ = try await tenants.updateProjectConfig(logger: logger) { _, project in project.authorizedDomains = nil }
            #expect(try await domains.current(logger: logger) == ["localhost"])
        }
    }
}
