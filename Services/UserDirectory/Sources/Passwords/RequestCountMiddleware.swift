import Hummingbird
import TesseraShared

/// The internal paths of signed-in users' requests: a refresh-token rotation, an account read.
private let signedInPaths: Set<String> = [InternalEndpoints.rotateRefreshToken.path, InternalEndpoints.getAccount.path]

/// Counts signed-in users' requests (refresh-token rotations, account reads) for the hashing
/// pool's `isInteractive()`.
struct RequestCountMiddleware<Context: RequestContext>: RouterMiddleware {
    let pool: HashingPool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        if signedInPaths.contains(request.uri.path) { pool.noteSignedInRequest() }
        return try await next(request, context)
    }
}
