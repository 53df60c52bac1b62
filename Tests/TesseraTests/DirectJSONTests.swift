import Foundation
import Testing

@testable import TesseraShared
@testable import TokenService

@Suite("hand-written JSON of the internal answers")
struct DirectJSONTests {
    /// Every member set, optionals included (`everyMemberIsSet` keeps it so when a member is added).
    static let full: UserRecord = {
        var user = UserRecord(
            tenantId: "tenant-1", localId: "u1", email: "a\"b\\c/d@example.com", emailVerified: true,
            displayName: "Zoë 😀 \u{1}\n\t\r line", photoUrl: "https://example.com/p.png", disabled: true,
            customAttributes: #"{"admin":true,"level":3}"#, validSince: 1_700_000_000,
            createdAt: 1_700_000_000_123, lastLoginAt: Int64.max, lastRefreshAt: 1_700_000_000_456,
            passwordUpdatedAt: 1_700_000_000_789,
            providerUserInfo: [
                ProviderUserInfo(
                    providerId: "google.com", rawId: "g-1", federatedId: "g-1", email: "a@example.com",
                    displayName: "A", photoUrl: "https://example.com/a", screenName: "a", phoneNumber: "+16505550100"),
                ProviderUserInfo(providerId: "password", rawId: "a@example.com"),
            ])
        user.phoneNumber = "+15555550100"
        user.customAuth = true
        user.emailLinkSignin = true
        user.initialEmail = "first@example.com"
        user.mfaInfo = [
            MFAEnrollmentInfo(
                mfaEnrollmentId: "e1", displayName: "app \"1\"", phoneInfo: "+15555550100", totpInfo: EmptyObject(),
                enrolledAt: "2024-01-01T00:00:00Z"),
            MFAEnrollmentInfo(
                mfaEnrollmentId: "e2", displayName: nil, phoneInfo: nil, totpInfo: nil,
                enrolledAt: "2024-01-02T00:00:00Z"),
        ]
        return user
    }()

    /// Every optional member nil, no links.
    static let sparse = UserRecord(tenantId: nil, localId: "u2", validSince: -1, createdAt: Int64.min)

    static let session: SessionInfo = {
        var session = SessionInfo(
            familyId: "f1", signInProvider: "custom", authTime: 1_700_000_000, tokenIssuedAt: 1_700_000_001,
            extraClaims: #"{"role":"x"}"#)
        session.secondFactor = "totp"
        session.secondFactorId = "e1"
        return session
    }()

    /// JSON text compared as values: parsed, then written with sorted keys.
    func canonical(_ bytes: some Sequence<UInt8>) throws -> Data {
        let value = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        return try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
    }

    func foundationBytes(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    @Test("the full fixture sets every member, so a member added later must be added to both encoders")
    func everyMemberIsSet() {
        func unset(_ value: Any) -> [String] {
            Mirror(reflecting: value).children.compactMap { child in
                let mirror = Mirror(reflecting: child.value)
                return mirror.displayStyle == .optional && mirror.children.isEmpty ? child.label : nil
            }
        }
        #expect(unset(Self.full).isEmpty)
        #expect(unset(Self.full.providerUserInfo[0]).isEmpty)
        #expect(unset(Self.session).isEmpty)
        #expect(unset(Self.full.mfaInfo![0]).isEmpty)
    }

    @Test("the writer and JSONEncoder produce the same JSON values", arguments: [full, sparse])
    func writerAgreesWithFoundation(user: UserRecord) throws {
        #expect(try canonical(user.jsonBytes()) == canonical(foundationBytes(user)))
        let account = AccountResponse(user: user)
        #expect(try canonical(account.jsonBytes()) == canonical(foundationBytes(account)))
        let lookup = LookupResponse(users: [user, user])
        #expect(try canonical(lookup.jsonBytes()) == canonical(foundationBytes(lookup)))
        let empty = LookupResponse(users: [])
        #expect(try canonical(empty.jsonBytes()) == canonical(foundationBytes(empty)))
        var created = SessionCreatedResponse(user: user, session: Self.session)
        #expect(try canonical(created.jsonBytes()) == canonical(foundationBytes(created)))
        created.secondFactor = SecondFactorChallenge(mfaInfo: Self.full.mfaInfo ?? [])
        #expect(try canonical(created.jsonBytes()) == canonical(foundationBytes(created)))
        #expect(try SessionCreatedResponse(jsonBytes: created.jsonBytes()).secondFactor == created.secondFactor)
        for sealed in ["sealed", nil] {
            let rotated = RotateRefreshTokenResponse(
                outcome: .replayed, user: user, session: Self.session, sealedSuccessor: sealed)
            #expect(try canonical(rotated.jsonBytes()) == canonical(foundationBytes(rotated)))
        }
    }

    @Test("the reader and JSONDecoder read the same values, either encoder's output", arguments: [full, sparse])
    func readerAgreesWithFoundation(user: UserRecord) throws {
        #expect(try UserRecord(jsonBytes: foundationBytes(user)) == user)
        #expect(try JSONDecoder().decode(UserRecord.self, from: Data(user.jsonBytes())) == user)
        #expect(try AccountResponse(jsonBytes: foundationBytes(AccountResponse(user: user))).user == user)
        let created = try SessionCreatedResponse(
            jsonBytes: foundationBytes(SessionCreatedResponse(user: user, session: Self.session)))
        #expect(created.user == user && created.session == Self.session)
        let rotated = try RotateRefreshTokenResponse(
            jsonBytes: RotateRefreshTokenResponse(
                outcome: .rotated, user: user, session: Self.session, sealedSuccessor: nil
            ).jsonBytes())
        #expect(rotated.outcome == .rotated && rotated.user == user && rotated.sealedSuccessor == nil)
    }

    @Test("escapes: \\u escapes and surrogate pairs decode, '/' may be escaped, members may be null or unknown")
    func readerEscapesNullsAndUnknownMembers() throws {
        let text = #"""
            { "localId" : "a\u00e9\ud83d\ude00\/\"\\\b\f\n\r\t", "emailVerified": false, "disabled": false,
              "validSince": 0, "createdAt": -12, "email": null, "providerUserInfo": [],
              "future": {"nested": [1, -2.5e+3, 0.1, true, null, "x", {}, []]}, "lastLoginAt": null }
            """#
        let user = try UserRecord(jsonBytes: Array(text.utf8))
        #expect(user.localId == "aé😀/\"\\\u{8}\u{C}\n\r\t")
        #expect(user.email == nil && user.lastLoginAt == nil && user.createdAt == -12)
        #expect(user.providerUserInfo.isEmpty)
    }

    @Test("integers: the Int64 range round-trips, and one past it is refused")
    func integerRange() throws {
        for value in [Int64.min, -1, 0, 7, 1_700_000_000_123, Int64.max] {
            let user = UserRecord(tenantId: nil, localId: "i", validSince: value, createdAt: value)
            #expect(try UserRecord(jsonBytes: user.jsonBytes()).validSince == value)
        }
        for bad in ["9223372036854775808", "-9223372036854775809", "1.5", "1e3", "01", "-", "+1", "0x10"] {
            let text =
                #"{"localId":"i","emailVerified":false,"disabled":false,"validSince":"#
                + bad + #","createdAt":0,"providerUserInfo":[]}"#
            #expect(throws: JSONReadError.self, "\(bad)") { try UserRecord(jsonBytes: Array(text.utf8)) }
        }
    }

    @Test("malformed documents and missing members are refused (as JSONDecoder refuses them, and a trailing comma)")
    func malformedIsRefused() throws {
        let valid =
            #"{"localId":"i","emailVerified":false,"disabled":false,"validSince":1,"createdAt":2,"providerUserInfo":[]}"#
        #expect(try UserRecord(jsonBytes: Array(valid.utf8)).localId == "i")
        let bad = [
            "", " ", "[]", "null", #"{"localId":"i"}"#,
            valid + " x", valid + "}", String(valid.dropLast()),
            valid.replacingOccurrences(of: #""i""#, with: #""\ud800""#),
            valid.replacingOccurrences(of: #""i""#, with: #""\udc00x""#),
            valid.replacingOccurrences(of: #""i""#, with: #""\x""#),
            valid.replacingOccurrences(of: #""i""#, with: #""\u12g4""#),
            valid.replacingOccurrences(of: #""i""#, with: "\"a\nb\""),
            valid.replacingOccurrences(of: #""i""#, with: "null"),
            valid.replacingOccurrences(of: "false", with: "fals"),
            valid.replacingOccurrences(of: "false", with: "0"),
            valid.replacingOccurrences(of: #""providerUserInfo":[]"#, with: #""providerUserInfo":[{}]"#),
            valid.replacingOccurrences(of: #""providerUserInfo":[]"#, with: #""providerUserInfo":null"#),
        ]
        for text in bad {
            #expect(throws: JSONReadError.self, "\(text)") { try UserRecord(jsonBytes: Array(text.utf8)) }
            #expect(throws: (any Error).self, "\(text)") {
                try JSONDecoder().decode(UserRecord.self, from: Data(text.utf8))
            }
        }
        // Stricter than Foundation's decoder, which accepts a trailing comma in an object.
        let trailingComma = valid.replacingOccurrences(of: "[]}", with: "[],}")
        #expect(throws: JSONReadError.self) { try UserRecord(jsonBytes: Array(trailingComma.utf8)) }
        let invalidUTF8: [UInt8] = Array(valid.utf8).map { $0 == UInt8(ascii: "i") ? 0xFF : $0 }
        #expect(throws: JSONReadError.self) { try UserRecord(jsonBytes: invalidUTF8) }
        let unknownOutcome = try String(
            decoding: foundationBytes(
                RotateRefreshTokenResponse(
                    outcome: .rotated, user: Self.sparse, session: Self.session, sealedSuccessor: nil)),
            as: UTF8.self
        ).replacingOccurrences(of: "rotated", with: "stolen")
        #expect(throws: JSONReadError.self) { try RotateRefreshTokenResponse(jsonBytes: Array(unknownOutcome.utf8)) }
    }

    @Test(
        "a DTO's scope is its wire tenantId: written only for a tenant, read from absent, null or \"\" as the project")
    func scopeIsTheWireTenantID() throws {
        let tenant = try JSONEncoder().encode(IdpConfigRequest(scope: Scope(wire: "t-1"), providerId: "google.com"))
        #expect(
            try JSONSerialization.jsonObject(with: tenant) as? NSDictionary == [
                "tenantId": "t-1", "providerId": "google.com",
            ])
        let project = try JSONEncoder().encode(IdpConfigRequest(scope: .project, providerId: "google.com"))
        #expect(try JSONSerialization.jsonObject(with: project) as? NSDictionary == ["providerId": "google.com"])
        for (json, scope) in [
            (#"{"providerId":"p"}"#, Scope.project), (#"{"tenantId":null,"providerId":"p"}"#, .project),
            (#"{"tenantId":"","providerId":"p"}"#, .project),
            (#"{"tenantId":"t-2","providerId":"p"}"#, Scope(wire: "t-2")),
        ] {
            #expect(try JSONDecoder().decode(IdpConfigRequest.self, from: Data(json.utf8)).scope == scope)
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(IdpConfigRequest.self, from: Data(#"{"tenantId":7,"providerId":"p"}"#.utf8))
        }
    }

    @Test("internal requests and the JWS header: the writer and the reader agree with Foundation")
    func requestsAndHeaderAgreeWithFoundation() throws {
        let account = AccountRequest(scope: Scope(wire: "t"), localId: "u")
        #expect(try canonical(account.jsonBytes()) == canonical(foundationBytes(account)))
        #expect(
            try AccountRequest(jsonBytes: foundationBytes(AccountRequest(scope: .project, localId: "u"))).scope
                == .project)
        let rotate = RotateRefreshTokenRequest(
            tokenHash: "a", newTokenHash: "b", sealedSuccessor: "c", graceSeconds: 30, idleSeconds: -1)
        #expect(try canonical(rotate.jsonBytes()) == canonical(foundationBytes(rotate)))
        let readRotate = try RotateRefreshTokenRequest(jsonBytes: foundationBytes(rotate))
        #expect(try canonical(readRotate.jsonBytes()) == canonical(foundationBytes(rotate)))
        var signUp = SignUpAnonymousRequest(scope: Scope(wire: "t"), refreshTokenHash: "h", sessionExpiresAt: 99)
        signUp.clientIP = "203.0.113.9"
        #expect(try canonical(signUp.jsonBytes()) == canonical(foundationBytes(signUp)))
        let readSignUp = try SignUpAnonymousRequest(jsonBytes: foundationBytes(signUp))
        #expect(readSignUp.clientIP == "203.0.113.9" && readSignUp.sessionExpiresAt == 99)
        #expect(throws: JSONReadError.self) {
            try RotateRefreshTokenRequest(jsonBytes: Array(#"{"tokenHash":"a"}"#.utf8))
        }
        // A password is any string: quotes, backslashes, controls, non-ASCII and astral characters.
        var signIn = SignInWithPasswordRequest(
            scope: Scope(wire: "t"), email: "a@example.com", password: "p\"a\\s/s\u{1}\tw\u{e9}\u{1F511}",
            session: NewSession(refreshTokenHash: "h", expiresAt: 1_700_000_000))
        signIn.clientIP = "2001:db8::1"
        signIn.refusedByGate = 12
        #expect(try canonical(signIn.jsonBytes()) == canonical(foundationBytes(signIn)))
        let readSignIn = try SignInWithPasswordRequest(jsonBytes: foundationBytes(signIn))
        #expect(try canonical(readSignIn.jsonBytes()) == canonical(foundationBytes(signIn)))
        #expect(readSignIn.password == signIn.password && readSignIn.clientIP == "2001:db8::1")
        #expect(readSignIn.refusedByGate == 12)
        let noTenant = try SignInWithPasswordRequest(
            jsonBytes: foundationBytes(
                SignInWithPasswordRequest(
                    scope: .project, email: "a@example.com", password: "x", session: signIn.session)))
        #expect(noTenant.scope == .project && noTenant.clientIP == nil)
        #expect(throws: JSONReadError.self) {
            try SignInWithPasswordRequest(
                jsonBytes: Array(#"{"email":"a@example.com","password":"x","session":{"refreshTokenHash":"h"}}"#.utf8))
        }

        let header = JWS.Header(alg: "RS256", kid: "k1", typ: "JWT")
        #expect(String(decoding: header.jsonBytes(), as: UTF8.self) == #"{"alg":"RS256","kid":"k1","typ":"JWT"}"#)
        #expect(try JWS.Header(jsonBytes: foundationBytes(header)) == header)
        #expect(throws: JSONReadError.self) { try JWS.Header(jsonBytes: Array(#"{"kid":"k1"}"#.utf8)) }
    }

    @Test("the password sign-in answer: the writer agrees with Foundation, every member written")
    func passwordSignInResponseAgreesWithFoundation() throws {
        let answer = AccountsController.PasswordSignInResponse(
            localId: "u1", email: "a\"b@example.com", displayName: "Zoë 😀", idToken: "a.b.c", refreshToken: "r/1",
            mfaPendingCredential: "p-1", mfaInfo: DirectJSONTests.full.mfaInfo)
        #expect(try canonical(answer.jsonBytes()) == canonical(foundationBytes(answer)))
        // Every stored member is written (a member added later fails here until the writer has it).
        let written = try #require(try JSONSerialization.jsonObject(with: Data(answer.jsonBytes())) as? [String: Any])
        #expect(Set(written.keys) == Set(Mirror(reflecting: answer).children.compactMap(\.label)))
    }

    @Test("claims: any JSON value is written as JSONEncoder writes it, members sorted by their UTF-8 bytes")
    func claimsAgreeWithFoundation() throws {
        let claims: JSONValue = .object([
            "sub": .string("u1"), "iat": .int(1_700_000_000), "ratio": .double(0.1), "big": .double(1e21),
            "whole": .double(100), "tiny": .double(-Double.leastNonzeroMagnitude), "none": .null, "yes": .bool(true),
            "list": .array([.int(-1), .string("a/b\"\u{7}"), .object([:]), .array([])]),
            "firebase": .object(["sign_in_provider": .string("anonymous"), "identities": .object([:])]),
            "é": .string("accent"), "Z": .string("upper"),
        ])
        let written = claims.jsonBytes()
        #expect(try canonical(written) == canonical(foundationBytes(claims)))
        let text = String(decoding: written, as: UTF8.self)
        let order = ["Z", "big", "firebase", "iat", "list", "none", "ratio", "sub", "tiny", "whole", "yes", "é"]
        let positions = order.map { text.range(of: "\"\($0)\":")!.lowerBound }
        #expect(positions == positions.sorted())
        #expect(String(decoding: JSONValue.double(.nan).jsonBytes(), as: UTF8.self) == "null")
    }

    @Test("a JWS header nested deeper than the skipping limit is refused, not recursed into")
    func deepNestingIsRefused() throws {
        let limit = JSONReader.maximumSkippedDepth
        let within =
            #"{"alg":"RS256","x":"# + String(repeating: "[", count: limit) + String(repeating: "]", count: limit) + "}"
        #expect(try JWS.Header(jsonBytes: Array(within.utf8)).alg == "RS256")
        // Well-formed, so only the depth limit refuses them (20,000 levels of recursion would not
        // fit a thread's stack).
        for depth in [limit + 1, 20_000] {
            let nested =
                #"{"alg":"RS256","x":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
                + "}"
            #expect(throws: JSONReadError.self) { try JWS.Header(jsonBytes: Array(nested.utf8)) }
        }
        // Through the verifier, as an attacker would send it: malformed, not a crash.
        let header =
            #"{"alg":"RS256","kid":"k","x":"# + String(repeating: "[", count: 5_000)
            + String(repeating: "]", count: 5_000)
            + "}"
        let token = Base64URL.encode(Data(header.utf8)) + ".e30.c2ln"
        #expect(throws: JWS.Failure.malformed) { try JWS.header(of: token) }
    }
}
