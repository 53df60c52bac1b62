import Foundation
import HTTPTypes
import Hummingbird
import TesseraShared

typealias TokenContext = TesseraRequestContext

/// Who is calling a client endpoint: an end user's app (API key) or an admin (`Authorization:
/// Bearer`), whose call the directory authenticates (API.md B.0: either is accepted).
enum Caller {
    case client
    case privileged(authorization: String)

    /// Admin bearer if present (other schemes count as absent), else the API key must be valid.
    static func identify(_ request: Request, apiKey: String) throws -> Caller {
        if let token = request.bearerToken {
            return .privileged(authorization: "Bearer \(token)")
        }
        try checkAPIKey(request, apiKey: apiKey)
        return .client
    }

    static func checkAPIKey(_ request: Request, apiKey: String) throws {
        let presented = request.uri.queryParameters.get("key") ?? request.headers[.googAPIKey]
        guard let presented, !presented.isEmpty else { throw FirebaseError.missingAPIKey }
        guard Secrets.constantTimeEquals(presented, apiKey) else { throw FirebaseError.invalidAPIKey }
    }
}

/// Both path forms of the token and key routes (API.md A.1); `identityToolkitPrefixes` is Shared's.
let secureTokenPrefixes = ["", "/securetoken.googleapis.com"]
let googleAPIsPrefixes = ["", "/www.googleapis.com"]
