import Foundation
import HTTPTypes
import Hummingbird
import TesseraShared

/// Cross-origin access for the browser SDKs (docs/design-notes.md, "Client SDKs and the legacy v3
/// API"): any origin, no credentials (the API key and bearer travel in the request, never in
/// cookies). A preflight is granted the headers it asks for, as Google's endpoints grant them: an
/// app's own header (a tracing or App Check header the SDK gained later) must not turn every call
/// into a network error. Without `Access-Control-Request-Headers` the SDKs' own list is granted.
struct FirebaseCORSMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Every header a Firebase SDK may send from a browser.
    static var sdkHeaders: String {
        "Content-Type, Authorization, X-Goog-Api-Key, X-Request-Id, X-Client-Version, X-Firebase-gmpid, "
            + "X-Firebase-Client, X-Firebase-Locale, X-Firebase-AppCheck"
    }
    static var methods: String { "GET, POST, OPTIONS" }
    /// A preflight's answer is cached by the browser for ten minutes (Chromium's cap is two hours).
    static var maxAge: String { "600" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let origin = request.headers[.origin] else { return try await next(request, context) }
        if request.method == .options {
            var headers: HTTPFields = [
                .accessControlAllowOrigin: origin,
                .accessControlAllowMethods: Self.methods,
                .accessControlAllowHeaders: Self.allowedHeaders(request.headers[values: .accessControlRequestHeaders]),
                .accessControlMaxAge: Self.maxAge,
            ]
            headers[values: .vary] = ["Origin", "Access-Control-Request-Headers"]
            return Response(status: .noContent, headers: headers)
        }
        // Errors reach here as responses: the error middleware is inside this one.
        var response = try await next(request, context)
        response.headers[.accessControlAllowOrigin] = origin
        response.headers[values: .vary].append("Origin")
        return response
    }

    /// The requested header names, each an RFC 9110 token (anything else is dropped, so nothing the
    /// client sent can break the answer's header); the SDKs' list when none was asked for.
    static func allowedHeaders(_ requested: [String]) -> String {
        let names = requested.flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { name in
                !name.isEmpty && name.count <= 128
                    && name.utf8.allSatisfy { byte in
                        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                            || "!#$%&'*+-.^_`|~".utf8.contains(byte)
                    }
            }
        return names.isEmpty ? sdkHeaders : names.prefix(64).joined(separator: ", ")
    }
}
