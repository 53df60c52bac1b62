import Foundation

/// One enrolled second factor of a user, as `mfaInfo[]` lists it (docs/protocol/mfa.md#the-factors).
public struct MFAEnrollmentInfo: Codable, Sendable, Equatable {
    public var mfaEnrollmentId: String
    public var displayName: String?
    /// A phone factor's number (E.164), masked but for its last four digits in a sign-in challenge.
    public var phoneInfo: String?
    /// A TOTP factor: an empty object, whose presence is how the SDKs tell the factor's kind.
    public var totpInfo: EmptyObject?
    /// RFC 3339.
    public var enrolledAt: String

    public init(
        mfaEnrollmentId: String, displayName: String?, phoneInfo: String?, totpInfo: EmptyObject?, enrolledAt: String
    ) {
        self.mfaEnrollmentId = mfaEnrollmentId
        self.displayName = displayName
        self.phoneInfo = phoneInfo
        self.totpInfo = totpInfo
        self.enrolledAt = enrolledAt
    }

    /// The factor's kind as the ID token's `firebase.sign_in_second_factor` names it.
    public var factorId: String { totpInfo != nil ? "totp" : "phone" }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.mfaEnrollmentId == rhs.mfaEnrollmentId && lhs.displayName == rhs.displayName
            && lhs.phoneInfo == rhs.phoneInfo && (lhs.totpInfo == nil) == (rhs.totpInfo == nil)
            && lhs.enrolledAt == rhs.enrolledAt
    }
}

/// What a first-factor sign-in of a user with second factors answers instead of a session: the
/// factors to choose from. The client's `mfaPendingCredential` is the token the token service
/// generated for the session; the directory keeps its hash as the pending sign-in.
public struct SecondFactorChallenge: Codable, Sendable, Equatable {
    public var mfaInfo: [MFAEnrollmentInfo]

    public init(mfaInfo: [MFAEnrollmentInfo]) {
        self.mfaInfo = mfaInfo
    }
}

extension MFAEnrollmentInfo: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("mfaEnrollmentId", mfaEnrollmentId)
            object.member("displayName", displayName)
            object.member("phoneInfo", phoneInfo)
            if totpInfo != nil { object.member(named: "totpInfo") { $0.object { _ in } } }
            object.member("enrolledAt", enrolledAt)
        }
    }

    public init(json reader: inout JSONReader) throws {
        var id: String?
        var displayName: String?
        var phoneInfo: String?
        var totp = false
        var enrolledAt: String?
        try reader.object { key, reader in
            switch key {
            case "mfaEnrollmentId": id = try reader.string()
            case "displayName": displayName = try reader.optionalString()
            case "phoneInfo": phoneInfo = try reader.optionalString()
            case "totpInfo":
                if try !reader.null() {
                    totp = true
                    try reader.skipValue()
                }
            case "enrolledAt": enrolledAt = try reader.string()
            default: try reader.skipValue()
            }
        }
        self.init(
            mfaEnrollmentId: try requiredJSONMember(id, "mfaEnrollmentId"), displayName: displayName,
            phoneInfo: phoneInfo, totpInfo: totp ? EmptyObject() : nil,
            enrolledAt: try requiredJSONMember(enrolledAt, "enrolledAt"))
    }
}

extension MFAEnrollmentInfo {
    /// A JSON array of factors (the directory's statements build it in SQL).
    public static func list(json text: String) throws -> [MFAEnrollmentInfo] {
        try Array(text.utf8).withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            let list = try reader.array { try MFAEnrollmentInfo(json: &$0) }
            try reader.expectEnd()
            return list
        }
    }
}

extension SecondFactorChallenge: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { object in object.member("mfaInfo", mfaInfo) }
    }

    public init(json reader: inout JSONReader) throws {
        var mfaInfo: [MFAEnrollmentInfo] = []
        try reader.object { key, reader in
            switch key {
            case "mfaInfo": mfaInfo = try reader.array { try MFAEnrollmentInfo(json: &$0) }
            default: try reader.skipValue()
            }
        }
        self.init(mfaInfo: mfaInfo)
    }
}
