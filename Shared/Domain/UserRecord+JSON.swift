/// Hand-written JSON for the user record and the internal answers that carry it (see
/// `DirectJSONEncodable`). Member names and presence are those of the synthesized `Codable`
/// conformances, which stay for everything else; `DirectJSONTests` checks the two agree for a
/// value with every member set and for one with every optional member nil.

extension ProviderUserInfo: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("providerId", providerId)
            object.member("rawId", rawId)
            object.member("federatedId", federatedId)
            object.member("email", email)
            object.member("displayName", displayName)
            object.member("photoUrl", photoUrl)
            object.member("screenName", screenName)
            object.member("phoneNumber", phoneNumber)
        }
    }

    public init(json reader: inout JSONReader) throws {
        var providerId: String?
        var rawId: String?
        self.init(providerId: "", rawId: "")
        try reader.object { key, reader in
            switch key {
            case "providerId": providerId = try reader.string()
            case "rawId": rawId = try reader.string()
            case "federatedId": federatedId = try reader.optionalString()
            case "email": email = try reader.optionalString()
            case "displayName": displayName = try reader.optionalString()
            case "photoUrl": photoUrl = try reader.optionalString()
            case "screenName": screenName = try reader.optionalString()
            case "phoneNumber": phoneNumber = try reader.optionalString()
            default: try reader.skipValue()
            }
        }
        self.providerId = try requiredJSONMember(providerId, "providerId")
        self.rawId = try requiredJSONMember(rawId, "rawId")
    }
}

extension UserRecord: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("tenantId", tenantId)
            object.member("localId", localId)
            object.member("email", email)
            object.member("emailVerified", emailVerified)
            object.member("displayName", displayName)
            object.member("photoUrl", photoUrl)
            object.member("phoneNumber", phoneNumber)
            object.member("disabled", disabled)
            object.member("customAttributes", customAttributes)
            object.member("validSince", validSince)
            object.member("createdAt", createdAt)
            object.member("lastLoginAt", lastLoginAt)
            object.member("lastRefreshAt", lastRefreshAt)
            object.member("passwordUpdatedAt", passwordUpdatedAt)
            object.member("providerUserInfo", providerUserInfo)
            object.member("customAuth", customAuth)
            object.member("emailLinkSignin", emailLinkSignin)
            object.member("initialEmail", initialEmail)
            object.member("mfaInfo", mfaInfo)
        }
    }

    public init(json reader: inout JSONReader) throws {
        var localId: String?
        var emailVerified: Bool?
        var disabled: Bool?
        var validSince: Int64?
        var createdAt: Int64?
        var providerUserInfo: [ProviderUserInfo]?
        self.init(tenantId: nil, localId: "", validSince: 0, createdAt: 0)
        try reader.object { key, reader in
            switch key {
            case "tenantId": tenantId = try reader.optionalString()
            case "localId": localId = try reader.string()
            case "email": email = try reader.optionalString()
            case "emailVerified": emailVerified = try reader.bool()
            case "displayName": displayName = try reader.optionalString()
            case "photoUrl": photoUrl = try reader.optionalString()
            case "phoneNumber": phoneNumber = try reader.optionalString()
            case "disabled": disabled = try reader.bool()
            case "customAttributes": customAttributes = try reader.optionalString()
            case "validSince": validSince = try reader.int()
            case "createdAt": createdAt = try reader.int()
            case "lastLoginAt": lastLoginAt = try reader.optionalInt()
            case "lastRefreshAt": lastRefreshAt = try reader.optionalInt()
            case "passwordUpdatedAt": passwordUpdatedAt = try reader.optionalInt()
            case "providerUserInfo": providerUserInfo = try reader.array { try ProviderUserInfo(json: &$0) }
            case "customAuth": customAuth = try reader.optionalBool()
            case "emailLinkSignin": emailLinkSignin = try reader.optionalBool()
            case "initialEmail": initialEmail = try reader.optionalString()
            case "mfaInfo": mfaInfo = try reader.null() ? nil : try reader.array { try MFAEnrollmentInfo(json: &$0) }
            default: try reader.skipValue()
            }
        }
        self.localId = try requiredJSONMember(localId, "localId")
        self.emailVerified = try requiredJSONMember(emailVerified, "emailVerified")
        self.disabled = try requiredJSONMember(disabled, "disabled")
        self.validSince = try requiredJSONMember(validSince, "validSince")
        self.createdAt = try requiredJSONMember(createdAt, "createdAt")
        self.providerUserInfo = try requiredJSONMember(providerUserInfo, "providerUserInfo")
    }
}

extension UserInfoWire: DirectJSONEncodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("localId", localId)
            object.member("email", email)
            object.member("emailVerified", emailVerified)
            object.member("displayName", displayName)
            object.member("photoUrl", photoUrl)
            object.member("phoneNumber", phoneNumber)
            object.member("validSince", validSince)
            object.member("disabled", disabled)
            object.member("createdAt", createdAt)
            object.member("lastLoginAt", lastLoginAt)
            object.member("lastRefreshAt", lastRefreshAt)
            object.member("passwordHash", passwordHash)
            object.member("passwordUpdatedAt", passwordUpdatedAt)
            object.member("customAttributes", customAttributes)
            object.member("tenantId", tenantId)
            object.member("providerUserInfo", providerUserInfo)
            object.member("customAuth", customAuth)
            object.member("emailLinkSignin", emailLinkSignin)
            object.member("initialEmail", initialEmail)
            object.member("screenName", screenName)
            object.member("mfaInfo", mfaInfo)
        }
    }
}

extension LookupResponse: DirectJSONEncodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("kind", kind)
            object.member("users", users)
        }
    }
}

extension AccountResponse: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("user", user)
            if let sessionEnded { object.member("sessionEnded", sessionEnded) }
        }
    }

    public init(json reader: inout JSONReader) throws {
        var user: UserRecord?
        var sessionEnded: Bool?
        try reader.object { key, reader in
            switch key {
            case "user": user = try UserRecord(json: &reader)
            case "sessionEnded": sessionEnded = try reader.optionalBool()
            default: try reader.skipValue()
            }
        }
        self.init(user: try requiredJSONMember(user, "user"), sessionEnded: sessionEnded)
    }
}

extension SessionInfo: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("familyId", familyId)
            object.member("signInProvider", signInProvider)
            object.member("authTime", authTime)
            object.member("tokenIssuedAt", tokenIssuedAt)
            object.member("extraClaims", extraClaims)
            object.member("secondFactor", secondFactor)
            object.member("secondFactorId", secondFactorId)
        }
    }

    public init(json reader: inout JSONReader) throws {
        var familyId: String?
        var signInProvider: String?
        var authTime: Int64?
        var tokenIssuedAt: Int64?
        var extraClaims: String?
        var secondFactor: String?
        var secondFactorId: String?
        try reader.object { key, reader in
            switch key {
            case "familyId": familyId = try reader.string()
            case "signInProvider": signInProvider = try reader.string()
            case "authTime": authTime = try reader.int()
            case "tokenIssuedAt": tokenIssuedAt = try reader.int()
            case "extraClaims": extraClaims = try reader.optionalString()
            case "secondFactor": secondFactor = try reader.optionalString()
            case "secondFactorId": secondFactorId = try reader.optionalString()
            default: try reader.skipValue()
            }
        }
        self.init(
            familyId: try requiredJSONMember(familyId, "familyId"),
            signInProvider: try requiredJSONMember(signInProvider, "signInProvider"),
            authTime: try requiredJSONMember(authTime, "authTime"),
            tokenIssuedAt: try requiredJSONMember(tokenIssuedAt, "tokenIssuedAt"),
            extraClaims: extraClaims)
        self.secondFactor = secondFactor
        self.secondFactorId = secondFactorId
    }
}

extension SessionCreatedResponse: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("user", user)
            object.member("session", session)
            object.member("secondFactor", secondFactor)
        }
    }

    public init(json reader: inout JSONReader) throws {
        var user: UserRecord?
        var session: SessionInfo?
        var secondFactor: SecondFactorChallenge?
        try reader.object { key, reader in
            switch key {
            case "user": user = try UserRecord(json: &reader)
            case "session": session = try SessionInfo(json: &reader)
            case "secondFactor": secondFactor = try reader.null() ? nil : try SecondFactorChallenge(json: &reader)
            default: try reader.skipValue()
            }
        }
        self.init(user: try requiredJSONMember(user, "user"), session: try requiredJSONMember(session, "session"))
        self.secondFactor = secondFactor
    }
}

extension RotateRefreshTokenResponse: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("outcome", outcome.rawValue)
            object.member("user", user)
            object.member("session", session)
            object.member("sealedSuccessor", sealedSuccessor)
        }
    }

    public init(json reader: inout JSONReader) throws {
        var outcome: Outcome?
        var user: UserRecord?
        var session: SessionInfo?
        var sealedSuccessor: String?
        try reader.object { key, reader in
            switch key {
            case "outcome":
                let text = try reader.string()
                guard let known = Outcome(rawValue: text) else {
                    throw JSONReadError(offset: reader.offset, reason: "unknown outcome")
                }
                outcome = known
            case "user": user = try UserRecord(json: &reader)
            case "session": session = try SessionInfo(json: &reader)
            case "sealedSuccessor": sealedSuccessor = try reader.optionalString()
            default: try reader.skipValue()
            }
        }
        self.init(
            outcome: try requiredJSONMember(outcome, "outcome"), user: try requiredJSONMember(user, "user"),
            session: try requiredJSONMember(session, "session"), sealedSuccessor: sealedSuccessor)
    }
}
