import HTTPTypes
import Hummingbird
import Logging

/// A context that can record that the caller is another Tessera service.
public protocol InternalCallerContext: TesseraContext {
    /// True once `InternalAuthMiddleware` has verified the internal secret.
    var isInternalCaller: Bool { get set }
}

/// The context of the internal API's handlers (issue #24): it exists only once the internal secret
/// was verified, so a handler that takes one never checks it.
public struct InternalContext<Parent: InternalCallerContext>: ChildRequestContext, TesseraContext {
    public var coreContext: CoreRequestContextStorage
    public var requestID: String

    public init(context: Parent) throws {
        guard context.isInternalCaller else { throw FirebaseError.internalAPIDenied }
        coreContext = context.coreContext
        requestID = context.requestID
    }
}

extension FirebaseError {
    static let internalAPIDenied = FirebaseError.permissionDenied("PERMISSION_DENIED : internal API")
}

/// Only the other Tessera services may call: the shared internal secret (`X-Tessera-Internal`),
/// compared in constant time. The ingress drops the header from outside callers and answers 404
/// for `/internal/` on both planes.
public struct InternalAuthMiddleware<Context: InternalCallerContext>: RouterMiddleware {
    let secret: String

    public init(secret: String) {
        self.secret = secret
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let presented = request.headers[.internalSecret], Secrets.constantTimeEquals(presented, secret) else {
            context.logger.warning("internal call without a valid internal secret")
            throw FirebaseError.internalAPIDenied
        }
        var context = context
        context.isInternalCaller = true
        return try await next(request, context)
    }
}

/// A service's route table: every method and path template it serves. The whole-stack test reads it to walk
/// each route through both planes of the ingress (docs/protocol/admin.md#the-admin-plane), so a route added
/// to a service is checked without anyone listing it by hand.
public struct RouteTable: Codable, Sendable {
    public struct Route: Codable, Sendable, Equatable {
        public var method: String
        public var path: String
    }

    public var routes: [Route]

    public static let path = "/internal/v1/routes"
}

extension RouterMethods where Context: InternalCallerContext {
    /// The internal API's routes: behind `InternalAuthMiddleware`, with an `InternalContext`.
    public func internalGroup(secret: String) -> RouterGroup<InternalContext<Context>> {
        group().add(middleware: InternalAuthMiddleware<Context>(secret: secret)).group(
            context: InternalContext<Context>.self)
    }
}

extension Router where Context: InternalCallerContext {
    /// Serves the routes registered so far, and this one, at `RouteTable.path` behind the internal
    /// secret. Call it last.
    public func addRouteTable(internalSecret: String) {
        var routes = self.routes.map { RouteTable.Route(method: $0.method.rawValue, path: "\($0.path)") }
        routes.append(RouteTable.Route(method: "GET", path: RouteTable.path))
        let table = RouteTable(routes: routes)
        internalGroup(secret: internalSecret).get(RouterPath(RouteTable.path)) { _, _ in JSONResponse(table) }
    }
}
