import Foundation
import HTTPTypes
import Hummingbird
import TesseraShared

/// The public-key endpoints (docs/protocol/tokens.md#token-rules, #public-keys): JWKS, the X.509 PEM map and
/// OpenID discovery. Bodies come pre-rendered from the key set; nothing here touches the directory.
struct KeysController {
    let keys: KeyStore
    /// Session cookies' own keys (issue #23).
    let cookieKeys: KeyStore
    let configuration: TokenServiceConfiguration
    /// How long clients may cache the key set. A new key is published a key-lead ahead of signing,
    /// so this must stay below that lead (docs/configuration.md).
    static let maxAge = 3600

    static let serviceAccount = "securetoken@system.gserviceaccount.com"

    /// The bundled OpenAPI document; nil only if the resource bundle was not shipped with the binary.
    static let apiDescription: Data? = Bundle.module.url(forResource: "openapi", withExtension: "yaml").flatMap {
        try? Data(contentsOf: $0)
    }

    func addRoutes(to router: Router<TokenContext>) {
        router.get("/.well-known/jwks.json", use: jwks)
        for prefix in googleAPIsPrefixes {
            router.get("\(prefix)/service_accounts/v1/jwk/\(Self.serviceAccount)", use: jwks)
            router.get("\(prefix)/robot/v1/metadata/x509/\(Self.serviceAccount)", use: x509)
        }
        // Session-cookie keys (docs/protocol/tokens.md#public-keys), a set of their own: as a JWKS and as the
        // kid→certificate map.
        for prefix in identityToolkitPrefixes {
            router.get("\(prefix)/v1/sessionCookiePublicKeys", use: cookieJWKS)
        }
        router.register(.get, "v3:publicKeys", use: cookieX509)
        router.get("/.well-known/openid-configuration", use: discovery)
        // The API description (OpenAPI 3.1), as checked in at Services/TokenService/Sources/Resources.
        let description = Self.apiDescription
        router.get("/openapi.yaml") { _, _ in
            guard let description else { throw FirebaseError.notFound }
            return Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=UTF-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: description)))
        }
        router.get("/securetoken.google.com/{project}/.well-known/openid-configuration", use: discovery)
    }

    func cached(_ data: Data) -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "application/json; charset=UTF-8",
                .cacheControl: "public, max-age=\(Self.maxAge), must-revalidate, no-transform",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    @Sendable func jwks(_ request: Request, context: TokenContext) async throws -> Response {
        cached(keys.current.jwksJSON)
    }

    @Sendable func x509(_ request: Request, context: TokenContext) async throws -> Response {
        cached(keys.current.x509JSON)
    }

    @Sendable func cookieJWKS(_ request: Request, context: TokenContext) async throws -> Response {
        cached(cookieKeys.current.jwksJSON)
    }

    @Sendable func cookieX509(_ request: Request, context: TokenContext) async throws -> Response {
        cached(cookieKeys.current.x509JSON)
    }

    struct Discovery: Encodable, Sendable {
        var issuer: String
        var jwks_uri: String
        var response_types_supported = ["id_token"]
        var subject_types_supported = ["public"]
        var id_token_signing_alg_values_supported = ["RS256"]
    }

    @Sendable func discovery(_ request: Request, context: TokenContext) async throws -> JSONResponse<Discovery> {
        if let project = context.parameters.get("project"), project != configuration.projectID {
            throw FirebaseError.notFound
        }
        // The configured public URL; without one, the request's host only when it is exactly an
        // authorized domain (issue #23): a cached document must never point keys at a host a caller
        // wrote into the Host header. Built on the Host, the answer varies with it.
        var headers: HTTPFields = [.cacheControl: "public, max-age=\(Self.maxAge)"]
        let base: String
        if let publicURL = configuration.publicURL {
            base = publicURL
        } else {
            base = try configuration.links.requestBase(request)
            headers[.vary] = "Host"
        }
        return JSONResponse(
            Discovery(
                issuer: "https://securetoken.google.com/\(configuration.projectID)",
                jwks_uri: base + "/.well-known/jwks.json"),
            headers: headers)
    }
}
