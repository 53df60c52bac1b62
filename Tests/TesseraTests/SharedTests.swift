import CoreMetrics
import Foundation
import Glibc
import HTTPTypes
import Hummingbird
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import Testing

@testable import TesseraShared

@Suite("Shared building blocks")
struct SharedTests {
    @Test("durations parse with ms, s, m, h and d units and reject junk")
    func durations() {
        #expect(Duration.parse("10s") == .seconds(10))
        #expect(Duration.parse("500ms") == .milliseconds(500))
        #expect(Duration.parse("5m") == .seconds(300))
        #expect(Duration.parse("1h") == .seconds(3600))
        #expect(Duration.parse("30d") == .seconds(30 * 86400))
        #expect(Duration.parse("1.5h") == .seconds(5400))
        #expect(Duration.parse("10") == nil)
        #expect(Duration.parse("-1s") == nil)
        #expect(Duration.parse("s") == nil)
        #expect(Duration.parse("tens") == nil)
    }

    @Test("base64url round-trips without padding and refuses impossible lengths")
    func base64url() {
        let bytes: [UInt8] = [0xfb, 0xff, 0xfe, 0x00, 0x01]
        let text = Base64URL.encode(bytes)
        #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
        #expect(Base64URL.decode(text) == Data(bytes))
        #expect(Base64URL.decode("a") == nil)
    }

    @Test("base64url agrees with Foundation's base64 for every length, padded or not, and refuses junk")
    func base64urlMatchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let standard = Data(bytes).base64EncodedString()
            let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            #expect(Base64URL.encode(bytes) == url.replacingOccurrences(of: "=", with: ""))
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == Data(bytes))
            #expect(Base64URL.decode(url) == Data(bytes))
            #expect(Base64URL.decode(standard) == Data(bytes))
        }
        for junk in ["ab=c", "a===", "ab$c", "ab c", "abc==", "=abc", "abcd=", "é"] {
            #expect(Base64URL.decode(junk) == nil, "\(junk)")
        }
    }

    @Test("random bytes and identifiers have the asked length and use every symbol")
    func randomness() {
        for count in [0, 1, 7, 8, 9, 12, 32, 64] { #expect(Secrets.randomBytes(count).count == count) }
        #expect(Secrets.randomBytes(32) != Secrets.randomBytes(32))
        let all = Set((0..<64).flatMap { _ in Secrets.randomBytes(64) })
        #expect(all.count > 250, "\(all.count) distinct byte values in 4,096 bytes")
        let ids = (0..<400).map { _ in Secrets.randomAlphanumeric(28) }
        #expect(ids.allSatisfy { $0.utf8.count == 28 } && Set(ids).count == ids.count)
        let symbols = Set(ids.joined())
        #expect(symbols == Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"))
        #expect(Secrets.randomAlphanumeric(0).isEmpty)
    }

    @Test("secret comparison is exact")
    func constantTime() {
        #expect(Secrets.constantTimeEquals("owner", "owner"))
        #expect(!Secrets.constantTimeEquals("owner", "owneR"))
        #expect(!Secrets.constantTimeEquals("owner", "owner2"))
        #expect(!Secrets.constantTimeEquals("", "x"))
    }

    @Test("business errors have no status; other classes carry status and reason")
    func errorShape() throws {
        let business = FirebaseErrorBody(FirebaseError.invalid(.emailExists))
        #expect(business.error.code == 400)
        #expect(business.error.message == "EMAIL_EXISTS")
        #expect(business.error.status == nil)
        #expect(business.error.errors.first?.reason == "invalid")
        let json = String(decoding: try JSONEncoder().encode(business), as: UTF8.self)
        #expect(!json.contains("status"))

        let detailed = FirebaseError.invalid(.weakPassword, "Password should be at least 6 characters")
        #expect(detailed.message == "WEAK_PASSWORD : Password should be at least 6 characters")
        #expect(detailed.code == "WEAK_PASSWORD")

        let notFound = FirebaseErrorBody(FirebaseError.notFound)
        #expect(notFound.error.code == 404 && notFound.error.status == "NOT_FOUND")
        let unavailable = FirebaseError.unavailable("down")
        #expect(unavailable.status.code == 503 && unavailable.retryAfterSeconds != nil)

        // The internal client reads an error back exactly as it was sent.
        let roundTrip = try JSONDecoder().decode(FirebaseErrorBody.self, from: try JSONEncoder().encode(business))
        #expect(roundTrip.firebaseError == FirebaseError.invalid(.emailExists))
    }

    @Test("every error code is the wire's SCREAMING_SNAKE code, a 400 without status, and reads back as itself")
    func everyErrorCode() throws {
        #expect(ErrorCode.allCases.count == Set(ErrorCode.allCases.map(\.rawValue)).count)
        for code in ErrorCode.allCases {
            #expect(code.rawValue.allSatisfy { $0.isUppercase || $0 == "_" }, "\(code)")
            let error = FirebaseError.invalid(code, "some detail")
            #expect(error.status == .badRequest && error.grpcStatus == nil && error.reason == "invalid")
            #expect(error.message == code.rawValue + " : some detail")
            let wire = try JSONEncoder().encode(FirebaseErrorBody(error))
            let back = try JSONDecoder().decode(FirebaseErrorBody.self, from: wire).firebaseError
            #expect(back.errorCode == code, "\(code) reads back through the internal client")
        }
        #expect(FirebaseError.tooManyAttempts(retryAfterSeconds: 1).errorCode == .tooManyAttemptsTryLater)
        #expect(FirebaseError.notFound.errorCode == nil, "other classes are not business codes")
    }

    @Test("a sweep-lease conflict is a 409 ABORTED that reads back as itself through the internal client")
    func leaseConflicts() throws {
        for conflict in LeaseConflict.allCases {
            let error = FirebaseError.lease(conflict, "some detail")
            #expect(error.status == .conflict && error.grpcStatus == "ABORTED" && error.code == conflict.rawValue)
            let wire = try JSONEncoder().encode(FirebaseErrorBody(error))
            let back = try JSONDecoder().decode(FirebaseErrorBody.self, from: wire).firebaseError
            #expect(back.leaseConflict == conflict, "\(conflict)")
            #expect(back.errorCode == nil, "not a business code")
        }
        #expect(FirebaseError.invalidArgument("LEASE_LOST").leaseConflict == nil, "a 400 is never a lease conflict")
    }

    @Test("JSON bodies accept snake_case keys and report syntax errors as INVALID_ARGUMENT")
    func jsonBodies() throws {
        struct Grant: Decodable { var grantType: String?; var refreshToken: String? }
        let grant = try JSONBody.decode(
            Grant.self, from: Data(#"{"grant_type":"refresh_token","refresh_token":"x"}"#.utf8))
        #expect(grant.grantType == "refresh_token" && grant.refreshToken == "x")
        #expect(throws: FirebaseError.self) { try JSONBody.decode(Grant.self, from: Data("{".utf8)) }
        do {
            _ = try JSONBody.decode(Grant.self, from: Data("{".utf8))
        } catch let error as FirebaseError {
            #expect(error.grpcStatus == "INVALID_ARGUMENT" && error.message.hasPrefix("Invalid JSON payload received."))
        }
    }

    @Test("user records render int64 fields as strings and omit absent fields")
    func userWire() throws {
        let user = UserRecord(
            tenantId: "t-1", localId: "u1", validSince: 1_700_000_000, createdAt: 1_700_000_000_123,
            lastLoginAt: 1_700_000_000_123, lastRefreshAt: 1_700_000_000_123)
        let json =
            try JSONSerialization.jsonObject(with: try JSONEncoder().encode(UserInfoWire(user))) as! [String: Any]
        #expect(json["validSince"] as? String == "1700000000")
        #expect(json["createdAt"] as? String == "1700000000123")
        #expect(json["lastRefreshAt"] as? String == "2023-11-14T22:13:20.123Z")
        #expect(json["providerUserInfo"] == nil && json["email"] == nil)
        #expect(user.isAnonymous)
    }
}

@Suite("client address behind trusted proxies")
struct ClientAddressTests {
    @Test("X-Forwarded-For is read from the right, only behind trusted proxies")
    func resolution() throws {
        let proxies = try ClientAddress(parsing: "127.0.0.1/32, 10.0.0.0/8, ::1")
        #expect(proxies.resolve(peer: "127.0.0.1", forwardedFor: "203.0.113.9") == "203.0.113.9")
        // A client-written entry sits left of what the proxies appended.
        #expect(proxies.resolve(peer: "127.0.0.1", forwardedFor: "1.2.3.4, 203.0.113.9, 10.1.2.3") == "203.0.113.9")
        // An untrusted peer's header is ignored.
        #expect(proxies.resolve(peer: "198.51.100.1", forwardedFor: "1.2.3.4") == "198.51.100.1")
        #expect(proxies.resolve(peer: "127.0.0.1", forwardedFor: nil) == "127.0.0.1")
        #expect(proxies.resolve(peer: "127.0.0.1", forwardedFor: "not-an-ip") == "127.0.0.1")
        #expect(proxies.resolve(peer: "::1", forwardedFor: "2001:db8::7") == "2001:db8::7")
        #expect(proxies.isTrusted("::ffff:10.9.8.7"))
        #expect(!proxies.isTrusted("11.0.0.1"))
        #expect(throws: ConfigError.self) { try ClientAddress(parsing: "10.0.0.0/33") }
    }

    @Test("the SSRF block list covers IPv6 forms that carry an IPv4 address, and lets public addresses through")
    func nonPublicAddresses() throws {
        func isPublic(_ text: String, raw: Bool = false) throws -> Bool {
            CIDR.isPublic(try #require(raw ? CIDR.rawBytes(text) : CIDR.addressBytes(text)))
        }
        for blocked in ["::7f00:1", "::a00:1", "::", "::1", "2001:0:a00:1::1", "2001::1", "64:ff9b::a00:1", "fd00::1"] {
            #expect(try !isPublic(blocked), "\(blocked)")
        }
        // An IPv4-mapped address is blocked as 16 bytes too, not only as the IPv4 address it maps.
        #expect(try !isPublic("::ffff:8.8.8.8", raw: true))
        #expect(try !isPublic("::ffff:127.0.0.1"))
        for allowed in ["8.8.8.8", "2606:4700::1111", "2a00:1450::1", "2001:4860:4860::8888"] {
            #expect(try isPublic(allowed), "\(allowed)")
        }
    }

    @Test("RFC 3339 times by integer arithmetic agree with Foundation's ISO 8601 style")
    func rfc3339() {
        let foundation = Date.ISO8601FormatStyle(timeZone: .gmt)
        var generator = SystemRandomNumberGenerator()
        // 1600-01-01 ... 9999-12-31: Foundation's Gregorian calendar is Julian before 1582.
        let low: Int64 = -11_676_096_000_000
        let high: Int64 = 253_402_300_799_999
        var samples: [Int64] = [0, -1, 1, 999, 1000, -999, -1000, -1001, 951_782_400_000, 951_868_799_999, low, high]
        for _ in 0..<20_000 { samples.append(Int64.random(in: low...high, using: &generator)) }
        for millis in samples {
            let (seconds, fraction) = RFC3339.floorDivision(millis, 1000)
            let date = Date(timeIntervalSince1970: Double(seconds))
            let expected =
                String(date.formatted(foundation).dropLast()) + "." + String(fraction + 1000).dropFirst() + "Z"
            #expect(RFC3339.millis(fromEpochMillis: millis) == expected, "\(millis)")
            #expect(RFC3339.seconds(date) == date.formatted(foundation), "\(millis)")
            #expect(RFC3339.seconds(Date(timeIntervalSince1970: Double(millis) / 1000)) == date.formatted(foundation))
        }
        #expect(RFC3339.millis(fromEpochMillis: 951_782_400_123) == "2000-02-29T00:00:00.123Z")
        #expect(RFC3339.millis(fromEpochMillis: -1) == "1969-12-31T23:59:59.999Z")
        #expect(RFC3339.millis(fromEpochMillis: -62_167_219_200_000) == "0000-01-01T00:00:00.000Z")
        #expect(RFC3339.civil(-62_167_219_201) == nil && RFC3339.civil(253_402_300_800) == nil)
        // Any stored timestamp formats without trapping (outside 0000...9999 through Foundation).
        for extreme in [Int64.min, Int64.min + 1, Int64.max] {
            #expect(!RFC3339.millis(fromEpochMillis: extreme).isEmpty)
        }
    }

    @Test("log lines are one JSON object: keys sorted, strings escaped, slashes as they are")
    func jsonLogLine() throws {
        var line: [UInt8] = []
        JSONLine.append(
            .dictionary([
                "message": "a \"quoted\" \\ path/x\nnext\t\u{01}é",
                "b": .array(["1", .stringConvertible(42)]),
                "a": .dictionary(["z": "1", "y": "2"]),
            ]), to: &line)
        let text = String(decoding: line, as: UTF8.self)
        #expect(
            text
                == #"{"a":{"y":"2","z":"1"},"b":["1","42"],"message":"a \"quoted\" \\ path/x\nnext\t\u0001é"}"#)
        let parsed = try #require(JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        #expect(parsed["message"] as? String == "a \"quoted\" \\ path/x\nnext\t\u{01}é")
    }
}

@Suite("form-encoded bodies")
struct FormURLEncodedTests {
    @Test("pairs, + for a space, escapes, the first of a repeated name, a name without a value")
    func parses() throws {
        let fields = try #require(FormURLEncoded.parse("a=1&b=x+y%2Bz&a=2&c&=skipped&d=%C3%A9&&e="))
        #expect(fields == ["a": "1", "b": "x y+z", "c": "", "d": "é", "e": ""])
        #expect(FormURLEncoded.parse("") == [:])
    }

    @Test("stray %, a bad escape and escaped invalid UTF-8 are nil, never a trap")
    func refusesMalformed() {
        for text in ["a=%", "a=%z", "a=%zz", "%=1", "a=%C3%28", "a=%FF"] {
            #expect(FormURLEncoded.parse(text) == nil, "\(text)")
        }
        // Characters a query may not hold are taken as they are (URLComponents' setter trapped on them).
        #expect(FormURLEncoded.parse("a=é \"<#>") == ["a": "é \"<#>"])
    }
}

@Suite("URLs as browsers read them")
struct WebURLTests {
    @Test("hosts, ports and paths come out as the WHATWG serializer writes them")
    func serializes() {
        let cases: [(String, String)] = [
            ("HTTPS://LOCALHOST/", "https://localhost/"),
            ("https://localhost:443/a", "https://localhost/a"),
            ("http://localhost:0080/", "http://localhost/"),
            ("https:\\\\evil.example/x", "https://evil.example/x"),
            ("https:evil.example", "https://evil.example/"),
            ("http://evil.example\\@localhost/", "http://evil.example/@localhost/"),
            ("  http://a.example/p q?r s#t u\n", "http://a.example/p%20q?r%20s#t%20u"),
            ("http://lo\tcal\nhost:3000/", "http://localhost:3000/"),
            ("https://0x7f.1/", "https://127.0.0.1/"),
            ("https://2130706433/", "https://127.0.0.1/"),
            ("https://0177.0.0.01/", "https://127.0.0.1/"),
            ("https://127.1./", "https://127.0.0.1/"),
            ("https://[0:0::1]:8080/", "https://[::1]:8080/"),
            ("https://\u{FF2C}\u{FF2F}\u{FF23}\u{FF21}\u{FF2C}host/", "https://localhost/"),
            ("https://evil\u{3002}example/", "https://evil.example/"),
            ("https://b\u{FC}cher.example/", "https://xn--bcher-kva.example/"),
            ("https://M\u{FC}nchen.example/", "https://xn--mnchen-3ya.example/"),
            ("https://%6C%6F%63alhost/", "https://localhost/"),
            ("https://a.example/\u{E9}?\u{E9}#\u{E9}", "https://a.example/%C3%A9?%C3%A9#%C3%A9"),
        ]
        for (input, expected) in cases {
            #expect(WebURL(input)?.description == expected, "\(input)")
        }
    }

    @Test("userinfo, other schemes, forbidden host code points and bad numbers are refused")
    func refuses() {
        for bad in [
            "", "localhost", "//evil.example/", "/relative", "javascript:alert(1)//localhost", "ftp://localhost/",
            "https://user@localhost/", "https://user:pw@localhost/",
            "https://localhost@evil.example/", "http://[::1]@evil.example/", "https://evil.example%5C@localhost/",
            "https://evil.example%2f.localhost/", "https://evil.example%00.localhost/", "https://local host/",
            "https://evil.example%/", "https://localhost:65536/", "https://localhost:8o/", "https:///",
            "https://256.0.0.1/", "https://1.2.3.4.5/", "https://0x100000000/", "https://[::1/", "https://[x]/",
            "https://a%C3%28.example/",
        ] {
            #expect(WebURL(bad) == nil, "\(bad)")
        }
    }

    @Test("loopback hosts in any spelling")
    func loopback() {
        for url in [
            "http://localhost:8080/", "http://127.1/", "http://2130706433/", "http://[::1]/", "http://LOCALHOST/",
        ] {
            #expect(WebURL(url)?.isLoopback == true, "\(url)")
        }
        for url in ["http://localhost.evil.example/", "http://128.0.0.1/", "http://[::2]/", "http://10.0.0.1/"] {
            #expect(WebURL(url)?.isLoopback == false, "\(url)")
        }
    }

    @Test("a Host header is a plain name or [IPv6] with an optional port")
    func hostHeaders() {
        #expect(WebURL.authority(ofHostHeader: "127.0.0.1:19099")?.authority == "127.0.0.1:19099")
        #expect(WebURL.authority(ofHostHeader: "Auth.Example.com")?.authority == "auth.example.com")
        #expect(WebURL.authority(ofHostHeader: "[::1]:8080")?.authority == "[::1]:8080")
        #expect(WebURL.authority(ofHostHeader: "localhost:80")?.authority == "localhost")
        for bad in [
            "", "evil.tld#.localhost", "localhost@evil.tld", "127.0.0.1/x", "host:abc", "[::1]x", "[::1",
            "a b", "\u{E9}.example", "host:123456", "evil.tld\\.localhost",
        ] {
            #expect(WebURL.authority(ofHostHeader: bad) == nil, "\(bad)")
        }
    }
}

@Suite("action links")
struct ActionLinkTests {
    static func request(authority: String, proto: String? = nil) -> Request {
        var head = HTTPRequest(method: .post, scheme: nil, authority: authority, path: "/v1/accounts:sendOobCode")
        if let proto { head.headerFields[HTTPField.Name("X-Forwarded-Proto")!] = proto }
        return Request(head: head, body: .init(buffer: ByteBuffer()))
    }

    @Test("links use the request's host only when it is exactly an authorized domain; the scheme is http or https")
    func requestHost() throws {
        let links = ActionLinks(
            actionURL: nil, publicURL: nil, apiKey: "k",
            authorizedDomains: ActionLinks.authorizedDomains(from: "localhost:9099, auth.app.example, "))
        #expect(links.authorizedDomains == ["localhost:9099", "auth.app.example"], "a blank entry is dropped")
        let prefix = try links.prefix(
            mode: "resetPassword", tenant: nil,
            request: Self.request(authority: "localhost:9099", proto: "https://evil/?"))
        #expect(prefix == "http://localhost:9099/__/auth/action?mode=resetPassword&apiKey=k&lang=en")
        let secure = try links.prefix(
            mode: "verifyEmail", tenant: "t", request: Self.request(authority: "auth.app.example", proto: "HTTPS"))
        #expect(secure == "https://auth.app.example/__/auth/action?mode=verifyEmail&apiKey=k&lang=en&tenantId=t")
        for host in [
            "evil.example", "evil.example.", "localhost@evil.example", "evil.example#.localhost", "localhost",
            "localhost:31337", "evil.localhost:9099", "x.auth.app.example", "auth.app.example:8443",
        ] {
            #expect(throws: FirebaseError.self, "\(host)") {
                try links.prefix(mode: "resetPassword", tenant: nil, request: Self.request(authority: host))
            }
        }
        // A configured public URL is used whatever the Host says.
        let pinned = ActionLinks(
            actionURL: nil, publicURL: "https://auth.example.com", apiKey: "k", authorizedDomains: [])
        #expect(
            try pinned.prefix(mode: "resetPassword", tenant: nil, request: Self.request(authority: "evil.example"))
                .hasPrefix("https://auth.example.com/__/auth/action?"))
    }

    @Test("a continue URL is http(s) on an authorized domain, without userinfo or characters browsers read otherwise")
    func continueURLs() throws {
        let links = ActionLinks(
            actionURL: nil, publicURL: nil, apiKey: "k", authorizedDomains: ["localhost", "app.example"])
        for good in [
            "http://localhost:3000/after", "https://www.app.example/a?b=c&d=%20#f", "https://app.example/",
        ] {
            #expect(try links.checkContinueURL(good) == good)
        }
        // What is returned is what a browser follows.
        #expect(try links.checkContinueURL("HTTPS://APP.EXAMPLE") == "https://app.example/")
        #expect(try links.checkContinueURL(nil) == nil)
        #expect(try links.checkContinueURL("") == nil)
        for bad in [
            // A browser reads `\` as `/`: this is evil.example to it, localhost to Foundation's URL.
            "http://evil.example\\@localhost/after", "http://evil.example:80\\@localhost/",
            "http://user@localhost/", "http://localhost@evil.example/", "http://evil.example\n@localhost/",
            "http://local host/", "javascript://localhost/%0aalert(1)", "ftp://localhost/", "/relative",
            "https:\\\\evil.example/", "https://evil.example#@localhost/", "https://evil.example?@localhost/",
            "https://localhost.evil.example/", "https://evil.example%2f.localhost/",
        ] {
            #expect(throws: FirebaseError.self, "\(bad)") { try links.checkContinueURL(bad) }
        }
        #expect(throws: FirebaseError.self) { try links.checkContinueURL("https://evil.example/?next=localhost") }
    }
}

@Suite("periodic services")
struct PeriodicServiceTests {
    /// Runs a counting service until `done` says so (checked every 10 ms, at most 10 s), then shuts
    /// it down gracefully; how often its work ran.
    static func runs(every interval: Duration, until done: @escaping @Sendable (Int) -> Bool) async throws -> Int {
        let count = Mutex(0)
        let service = PeriodicService(every: interval) { count.withLock { $0 += 1 } }
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let deadline = ContinuousClock.now + .seconds(10)
            while !done(count.withLock { $0 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        return count.withLock { $0 }
    }

    @Test("work runs on its interval until graceful shutdown; zero means never, not a busy loop")
    func intervals() async throws {
        #expect(try await Self.runs(every: .milliseconds(20)) { $0 >= 3 } >= 3)
        let start = ContinuousClock.now
        #expect(try await Self.runs(every: .zero) { _ in ContinuousClock.now - start > .milliseconds(100) } == 0)
    }
}

@Suite("tracing configuration")
struct TraceExportTests {
    @Test("tracing is off unless OTEL_TRACES_EXPORTER names an exporter, and off when the SDK is disabled")
    func offByDefault() throws {
        #expect(try TraceExport.bootstrap(serviceName: "test", environment: [:]) == nil)
        #expect(try TraceExport.bootstrap(serviceName: "test", environment: ["OTEL_TRACES_EXPORTER": "none"]) == nil)
        #expect(try TraceExport.bootstrap(serviceName: "test", environment: ["OTEL_TRACES_EXPORTER": ""]) == nil)
        #expect(
            try TraceExport.bootstrap(
                serviceName: "test", environment: ["OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"]) == nil)
        #expect(!TraceExport.isEnabled)
    }

    @Test("an exporter or OTLP protocol that is not built in is a configuration error, not a crash")
    func unsupportedExporters() throws {
        for exporter in ["console", "zipkin", "jaeger", "otlp,console"] {
            #expect(throws: ConfigError.self) {
                try TraceExport.bootstrap(serviceName: "test", environment: ["OTEL_TRACES_EXPORTER": exporter])
            }
        }
        for key in ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] {
            #expect(throws: ConfigError.self) {
                try TraceExport.bootstrap(
                    serviceName: "test", environment: ["OTEL_TRACES_EXPORTER": "otlp", key: "grpc"])
            }
        }
        #expect(!TraceExport.isEnabled)
    }

    @Test("the shutdown deadline defaults inside Kubernetes' grace period and is configurable")
    func shutdownTimeout() throws {
        #expect(try ConfigReader([:]).shutdownTimeout() == .seconds(25))
        #expect(try ConfigReader(["TESSERA_SHUTDOWN_TIMEOUT": "5s"]).shutdownTimeout() == .seconds(5))
        #expect(throws: ConfigError.self) { try ConfigReader(["TESSERA_SHUTDOWN_TIMEOUT": "soon"]).shutdownTimeout() }
    }

    @Test("tasks run on the event loops unless TESSERA_TASKS_ON_EVENT_LOOPS says false; junk is refused")
    func tasksOnEventLoops() throws {
        #expect(try TaskExecutorSetup.enabled(ConfigReader([:])))
        #expect(try !TaskExecutorSetup.enabled(ConfigReader(["TESSERA_TASKS_ON_EVENT_LOOPS": "false"])))
        #expect(throws: ConfigError.self) {
            try TaskExecutorSetup.enabled(ConfigReader(["TESSERA_TASKS_ON_EVENT_LOOPS": "sometimes"]))
        }
        // Refused, or turned off, before anything is installed (this process keeps Swift's pool).
        #expect(throws: ConfigError.self) {
            try TaskExecutorSetup.install(ConfigReader(["TESSERA_TASKS_ON_EVENT_LOOPS": "sometimes"]))
        }
        #expect(try TaskExecutorSetup.install(ConfigReader(["TESSERA_TASKS_ON_EVENT_LOOPS": "no"])) == .swiftPool)
    }

    @Test("the linker's address of the runtime's enqueue hook is the one the runtime exports")
    func linkedEnqueueHook() throws {
        // This test binary links the Swift runtime as a shared library, where dlsym (NIO's way)
        // finds the hook. The address the linker gives TaskExecutorSetup, which a statically linked
        // service installs through, must be that very variable: not a copy of its own.
        let linked = try #require(TaskExecutorSetup.linkedEnqueueGlobalHookAddress)
        let exported = try #require(dlsym(dlopen(nil, RTLD_NOW), "swift_task_enqueueGlobal_hook"))
        #expect(linked == exported)
        // And it lies in the runtime's own image (a copy relocation would put both in this binary).
        let address = UInt(bitPattern: linked)
        // Read to the end: /proc files report a size of 0, and a sized read stops short.
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/maps"))
        defer { try? handle.close() }
        let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        // A library's .bss is the anonymous mapping right after its last file-backed one.
        var image = "no mapping"
        var previous: (end: UInt, path: String)?
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            let range = fields.first?.split(separator: "-").compactMap { UInt($0, radix: 16) } ?? []
            guard range.count == 2 else { continue }
            let path = fields.count >= 6 ? String(fields[5]) : ""
            let owner = path.isEmpty && previous?.end == range[0] ? previous?.path ?? "" : path
            if range[0] <= address && address < range[1] {
                image = owner
                break
            }
            previous = (range[1], owner)
        }
        #expect(image.hasSuffix("libswift_Concurrency.so"), "the hook lies in \(image)")
    }
}

@Suite("heap trimming")
struct HeapTrimTests {
    @Test("a heap trim gives memory freed inside the allocator's heap back to the system")
    func heapTrim() throws {
        // 64 MiB in 8 KiB blocks (below glibc's mmap threshold: they come from this thread's arena),
        // written so that they are resident; then all but every 32nd are freed, so the free memory
        // lies between live blocks, where only a trim returns it.
        let count = 8192
        let size = 8192
        var blocks: [UnsafeMutableRawPointer] = []
        blocks.reserveCapacity(count)
        for _ in 0..<count {
            let block = try #require(malloc(size))
            memset(block, 0x5a, size)
            blocks.append(block)
        }
        for (index, block) in blocks.enumerated() where index % 32 != 0 { free(block) }
        defer { for (index, block) in blocks.enumerated() where index % 32 == 0 { free(block) } }
        // Residency of the freed blocks' whole pages, asked of the kernel page by page (mincore), so
        // what other tests allocate meanwhile does not count. The last run of freed blocks is left
        // out: it is the top of the heap, which free() itself may give back.
        let freed = blocks.enumerated().filter { $0.offset % 32 != 0 && $0.offset < count - 32 }.map(\.element)
        let before = try Self.residentPages(freed, size: size)
        #expect(HeapTrim.trim())
        let after = try Self.residentPages(freed, size: size)
        #expect(before.resident * 10 >= before.total * 9, "\(before.resident) of \(before.total) pages resident before")
        #expect(after.resident * 2 <= after.total, "\(after.resident) of \(after.total) pages still resident after")
    }

    /// How many of the whole pages inside `blocks` (each `size` bytes) are resident, of how many.
    static func residentPages(_ blocks: [UnsafeMutableRawPointer], size: Int) throws -> (resident: Int, total: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var resident = 0
        var total = 0
        var vector = [UInt8](repeating: 0, count: size / page + 1)
        for block in blocks {
            let start = (Int(bitPattern: block) + page - 1) / page * page
            let end = (Int(bitPattern: block) + size) / page * page
            guard end > start else { continue }
            let pages = (end - start) / page
            let status = vector.withUnsafeMutableBufferPointer {
                mincore(UnsafeMutableRawPointer(bitPattern: start), end - start, $0.baseAddress)
            }
            try #require(status == 0, "mincore failed: errno \(errno)")
            resident += vector.prefix(pages).filter { $0 & 1 == 1 }.count
            total += pages
        }
        return (resident, total)
    }
}

@Suite("secret settings")
struct SecretSettingTests {
    @Test("a secret comes from NAME or NAME_FILE, never both, and must not be empty, a placeholder or short")
    func secrets() throws {
        let strong = String(repeating: "0123456789abcdef", count: 4)
        #expect(try ConfigReader(["S": strong]).secret("S") == strong)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        try Data((strong + "\n").utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try ConfigReader(["S_FILE": file.path]).secret("S") == strong, "one trailing line break dropped")
        #expect(throws: ConfigError.self) { try ConfigReader(["S": strong, "S_FILE": file.path]).secret("S") }
        #expect(throws: ConfigError.self) { try ConfigReader(["S_FILE": file.path + "-missing"]).secret("S") }
        #expect(throws: ConfigError.self) { try ConfigReader([:]).secret("S") }
        for weak in [
            "owner", "OWNER", "change-me", "please-change-me-\(strong)", "secret", String(strong.prefix(63)),
            String(repeating: "a", count: 200), "Tr0ub4dor&3",
        ] {
            #expect(SecretStrength.problem(weak) != nil, "\(weak)")
            #expect(throws: ConfigError.self, "\(weak)") { try ConfigReader(["S": weak]).secret("S") }
        }
        // 43 characters of base64url carry 256 bits; 64 hex digits too.
        #expect(SecretStrength.problem("tsa_" + Base64URL.encode(Secrets.randomBytes(32))) == nil)
        #expect(SecretStrength.problem(strong) == nil)
    }
    @Test("library metrics recorded through swift-metrics get Prometheus names in the service's registry")
    func libraryMetricNames() {
        #expect(LibraryMetricsFactory.name("hb.requests", suffix: "total") == "hb_requests_total")
        #expect(LibraryMetricsFactory.name("x_total", suffix: "total") == "x_total")
        #expect(
            LibraryMetricsFactory.name("http.server.request.duration", suffix: "seconds")
                == "http_server_request_duration_seconds")
        #expect(LibraryMetricsFactory.plain("1st-gauge") == "_1st_gauge")
        let metrics = ServiceMetrics()
        let factory = LibraryMetricsFactory(registry: metrics.registry)
        factory.makeCounter(label: "hb.requests", dimensions: [("http.route", "/v1/token")]).increment(by: 2)
        factory.makeMeter(label: "http.server.active_requests", dimensions: [("http.request.method", "GET")])
            .set(3.0)
        factory.makeTimer(label: "http.server.request.duration", dimensions: []).recordNanoseconds(1_000_000)
        let text = String(decoding: metrics.registry.emitToBuffer(), as: UTF8.self)
        #expect(text.contains("hb_requests_total{http_route=\"/v1/token\"} 2"))
        #expect(text.contains("http_server_active_requests{http_request_method=\"GET\"} 3"))
        #expect(text.contains("http_server_request_duration_seconds_count 1"))
    }

    @Test("process metrics read /proc/self: CPU, memory, descriptors, start time")
    func processMetrics() throws {
        let fields = try #require(
            ProcessMetrics.statFields("42 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22"))
        #expect(fields[0] == "S" && fields[11] == "11")
        #expect(ProcessMetrics.statFields("42 (short) S 1 2") == nil)
        let metrics = ServiceMetrics()
        let text = String(decoding: metrics.registry.emitToBuffer(), as: UTF8.self)
        func value(_ name: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
                Double($0.split(separator: " ")[1])
            }
        }
        #expect((value("process_open_fds") ?? 0) > 0)
        #expect((value("process_max_fds") ?? 0) >= (value("process_open_fds") ?? 0))
        #expect((value("process_resident_memory_bytes") ?? 0) > 1_000_000)
        #expect((value("process_cpu_seconds_total") ?? 0) > 0)
        let started = value("process_start_time_seconds") ?? 0
        #expect(started > Date().timeIntervalSince1970 - 86400 * 7 && started <= Date().timeIntervalSince1970 + 1)
    }
}
