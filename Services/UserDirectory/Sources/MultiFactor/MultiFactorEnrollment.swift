import Foundation
import TesseraShared

/// A user's enrolled second factors, as Firebase's `mfaInfo[]` lists them.
struct MultiFactorEnrollment: Sendable, Equatable {
    enum Factor: Sendable, Equatable {
        /// An authenticator app's TOTP seed, sealed (`SecretSealer`), and the last time step a code
        /// of it was accepted for.
        case totp(sealedSecret: String, lastStep: Int64?)
        /// A phone number (E.164) that receives codes by SMS.
        case phone(String)
    }

    let enrollmentId: String
    let localId: String
    let displayName: String?
    let factor: Factor
    let enrolledAt: Date
}

extension MultiFactorEnrollment {
    /// A new enrolment id: 28 URL-safe characters, as unguessable as a user id.
    static func newID() -> String { Secrets.randomAlphanumeric(28) }
}
