/// Hand-written JSON (`DirectJSONEncodable`, `DirectJSONDecodable`) for the internal requests of
/// the hot paths: lookup (`AccountRequest`), refresh (`RotateRefreshTokenRequest`), anonymous
/// sign-up (`SignUpAnonymousRequest`) and password sign-in (`SignInWithPasswordRequest`). The token
/// service writes them, the directory reads them.

extension AccountRequest: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("tenantId", scope.tenantID)
            object.member("localId", localId)
            if let session { object.member("session", session) }
            if let issuedAt { object.member("issuedAt", issuedAt) }
            if let withFactors { object.member("withFactors", withFactors) }
        }
    }

    public init(json reader: inout JSONReader) throws {
        var tenantId: String?
        var localId: String?
        var session: String?
        var issuedAt: Int64?
        var withFactors: Bool?
        try reader.object { key, reader in
            switch key {
            case "tenantId": tenantId = try reader.optionalString()
            case "localId": localId = try reader.string()
            case "session": session = try reader.optionalString()
            case "issuedAt": issuedAt = try reader.optionalInt()
            case "withFactors": withFactors = try reader.optionalBool()
            default: try reader.skipValue()
            }
        }
        self.init(
            scope: Scope(wire: tenantId), localId: try requiredJSONMember(localId, "localId"), session: session,
            issuedAt: issuedAt)
        self.withFactors = withFactors
    }
}

extension RotateRefreshTokenRequest: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("tokenHash", tokenHash)
            object.member("newTokenHash", newTokenHash)
            object.member("sealedSuccessor", sealedSuccessor)
            object.member("graceSeconds", graceSeconds)
            object.member("idleSeconds", idleSeconds)
        }
    }

    public init(json reader: inout JSONReader) throws {
        var tokenHash: String?
        var newTokenHash: String?
        var sealedSuccessor: String?
        var graceSeconds: Int64?
        var idleSeconds: Int64?
        try reader.object { key, reader in
            switch key {
            case "tokenHash": tokenHash = try reader.string()
            case "newTokenHash": newTokenHash = try reader.string()
            case "sealedSuccessor": sealedSuccessor = try reader.string()
            case "graceSeconds": graceSeconds = try reader.int()
            case "idleSeconds": idleSeconds = try reader.int()
            default: try reader.skipValue()
            }
        }
        self.init(
            tokenHash: try requiredJSONMember(tokenHash, "tokenHash"),
            newTokenHash: try requiredJSONMember(newTokenHash, "newTokenHash"),
            sealedSuccessor: try requiredJSONMember(sealedSuccessor, "sealedSuccessor"),
            graceSeconds: try requiredJSONMember(graceSeconds, "graceSeconds"),
            idleSeconds: try requiredJSONMember(idleSeconds, "idleSeconds"))
    }
}

extension SignUpAnonymousRequest: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("clientIP", clientIP)
            object.member("tenantId", scope.tenantID)
            object.member("refreshTokenHash", refreshTokenHash)
            object.member("sessionExpiresAt", sessionExpiresAt)
        }
    }

    public init(json reader: inout JSONReader) throws {
        var clientIP: String?
        var tenantId: String?
        var refreshTokenHash: String?
        var sessionExpiresAt: Int64?
        try reader.object { key, reader in
            switch key {
            case "clientIP": clientIP = try reader.optionalString()
            case "tenantId": tenantId = try reader.optionalString()
            case "refreshTokenHash": refreshTokenHash = try reader.string()
            case "sessionExpiresAt": sessionExpiresAt = try reader.int()
            default: try reader.skipValue()
            }
        }
        self.init(
            scope: Scope(wire: tenantId),
            refreshTokenHash: try requiredJSONMember(refreshTokenHash, "refreshTokenHash"),
            sessionExpiresAt: try requiredJSONMember(sessionExpiresAt, "sessionExpiresAt"))
        self.clientIP = clientIP
    }
}

extension NewSession: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("refreshTokenHash", refreshTokenHash)
            object.member("expiresAt", expiresAt)
        }
    }

    public init(json reader: inout JSONReader) throws {
        var refreshTokenHash: String?
        var expiresAt: Int64?
        try reader.object { key, reader in
            switch key {
            case "refreshTokenHash": refreshTokenHash = try reader.string()
            case "expiresAt": expiresAt = try reader.int()
            default: try reader.skipValue()
            }
        }
        self.init(
            refreshTokenHash: try requiredJSONMember(refreshTokenHash, "refreshTokenHash"),
            expiresAt: try requiredJSONMember(expiresAt, "expiresAt"))
    }
}

extension SignInWithPasswordRequest: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("clientIP", clientIP)
            object.member("tenantId", scope.tenantID)
            object.member("email", email)
            object.member("password", password)
            object.member("session", session)
            object.member("refusedByGate", refusedByGate.map(Int64.init))
        }
    }

    public init(json reader: inout JSONReader) throws {
        var clientIP: String?
        var tenantId: String?
        var email: String?
        var password: String?
        var session: NewSession?
        var refusedByGate: Int64?
        try reader.object { key, reader in
            switch key {
            case "clientIP": clientIP = try reader.optionalString()
            case "tenantId": tenantId = try reader.optionalString()
            case "email": email = try reader.string()
            case "password": password = try reader.string()
            case "session": session = try NewSession(json: &reader)
            case "refusedByGate": refusedByGate = try reader.optionalInt()
            default: try reader.skipValue()
            }
        }
        self.init(
            scope: Scope(wire: tenantId), email: try requiredJSONMember(email, "email"),
            password: try requiredJSONMember(password, "password"),
            session: try requiredJSONMember(session, "session"))
        self.clientIP = clientIP
        self.refusedByGate = refusedByGate.map { Int(clamping: $0) }
    }
}
