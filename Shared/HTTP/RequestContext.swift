import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// What every Tessera request context carries: the request id, taken from `X-Request-ID` when the
/// ingress or a sibling service sent one.
public protocol TesseraContext: RequestContext {
    var requestID: String { get set }
}

/// The request context of the services that need nothing more than the request id.
public struct TesseraRequestContext: InternalCallerContext {
    public var coreContext: CoreRequestContextStorage
    public var requestID: String
    public var isInternalCaller = false
    /// The peer's address (the ingress, behind one); see `ClientAddress` for the end user's.
    public var remoteAddress: String?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.requestID = ""
        self.remoteAddress = source.channel.remoteAddress?.ipAddress
    }
}

extension HTTPField.Name {
    public static let requestID = HTTPField.Name("X-Request-ID")!
    public static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    public static let internalSecret = HTTPField.Name("X-Tessera-Internal")!
    /// The end user's address as the token service resolved it, on admin calls it relays to the
    /// directory; believed only beside a valid internal secret (docs/architecture.md, "The admin
    /// authentication limit").
    public static let relayedClientAddress = HTTPField.Name("X-Tessera-Client-Address")!
    public static let googAPIKey = HTTPField.Name("x-goog-api-key")!
}
