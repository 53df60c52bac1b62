import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

/// The hosted handler and relay iframe the SDKs open for a sign-in with a provider's own pages
/// (docs/oauth-flows.md): `signInWithPopup`/`signInWithRedirect` of the JS SDK, the Apple SDK's
/// `OAuthProvider` and the Android SDK's `startActivityForSignInWithProvider`.
/// - `GET /__/auth/handler` (and `/emulator/auth/handler`, where the SDKs' emulator setting points)
///   with the SDK's parameters starts a flow and sends the browser to the provider.
/// - The provider answers to `<public URL>/__/auth/handler` (GET, or Apple's `form_post`); the page
///   hands the answer back to the SDK that started it — the relay iframe, the app's page, the app —
///   and the SDK redeems it with `signInWithIdp`. A flow an app started with `createAuthUri` goes on
///   to the app's `continueUri` instead.
/// - `GET /__/auth/iframe` (and `/emulator/auth/iframe`): the relay iframe.
struct AuthHandlerController {
    let tokens: SessionTokens
    let flows: AuthorizationFlows
    let configuration: TokenServiceConfiguration

    static let handlerPath = "/__/auth/handler"
    static let emulatorHandlerPath = "/emulator/auth/handler"
    static let iframePath = "/__/auth/iframe"
    static let emulatorIframePath = "/emulator/auth/iframe"
    static let handlerScriptPath = "/__/auth/handler.js"
    static let iframeScriptPath = "/__/auth/iframe.js"

    /// The JS SDK's `authType`s (`AuthEventType`).
    static let webAuthTypes: Set<String> = [
        "signInViaPopup", "linkViaPopup", "reauthViaPopup", "signInViaRedirect", "linkViaRedirect",
        "reauthViaRedirect",
    ]

    func addRoutes(to router: Router<TokenContext>) {
        for path in [Self.handlerPath, Self.emulatorHandlerPath] {
            router.get(RouterPath(path), use: get)
            router.post(RouterPath(path), use: post)
        }
        for path in [Self.iframePath, Self.emulatorIframePath] { router.get(RouterPath(path), use: iframe) }
        router.get(RouterPath(Self.handlerScriptPath)) { _, _ in Self.script(AuthHandlerScripts.handler) }
        router.get(RouterPath(Self.iframeScriptPath)) { _, _ in Self.script(AuthHandlerScripts.iframe) }
    }

    /// The provider's `redirect_uri`: one fixed URL per deployment, to register with every provider.
    static func handlerURL(configuration: TokenServiceConfiguration, request: Request) throws -> String {
        let base = try configuration.publicURL ?? configuration.links.requestBase(request)
        return (base.hasSuffix("/") ? String(base.dropLast()) : base) + handlerPath
    }

    /// The query as a form reads it (`+` is a space; the SDKs send a plus as `%2B`); the first
    /// occurrence of a name wins. Unreadable percent-encoding reads as no parameters at all.
    static func query(_ request: Request) -> [String: String] {
        FormURLEncoded.parse(request.uri.query ?? "") ?? [:]
    }

    @Sendable func get(_ request: Request, context: TokenContext) async throws -> Response {
        let fields = Self.query(request)
        if fields["state"] != nil {
            return await answer(fields, rawQuery: request.uri.query, postBody: nil, request: request, context: context)
        }
        return await start(fields, request: request, context: context)
    }

    /// A provider's `form_post` answer (Apple; a tenant's OIDC provider's ID token).
    @Sendable func post(_ request: Request, context: TokenContext) async throws -> Response {
        var request = request
        let text: String
        do {
            text = String(buffer: try await request.collectBody(upTo: 64 << 10))
        } catch {
            text = ""
        }
        let fields = FormURLEncoded.parse(text) ?? [:]
        return await answer(fields, rawQuery: nil, postBody: text, request: request, context: context)
    }

    // MARK: Start

    /// What the SDK's parameters ask for, checked; the errors are the page's to show (or, for a
    /// web SDK whose page can be trusted with it, the event's to carry).
    func start(_ q: [String: String], request: Request, context: TokenContext) async -> Response {
        let language = AuthHandlerStrings.choose(lang: q["hl"], acceptLanguage: request.headers[.acceptLanguage])
        let page = AuthHandlerHTML(language: language)
        guard let key = q["apiKey"], Secrets.constantTimeEquals(key, configuration.apiKey) else {
            return page.error(.invalid(.invalidApiKey))
        }
        guard let providerId = q["providerId"], FederatedProviders.kind(of: providerId) != nil else {
            return page.error(.invalid(.invalidProviderId))
        }
        let scope = Scope(wire: (q["tid"] ?? q["tenantId"]).flatMap { $0.isEmpty ? nil : $0 })
        var started: AuthFlowClient?
        do {
            let links = try await tokens.currentLinks(requestID: context.requestID, logger: context.logger)
            let (client, sessionHashes) = try client(q, links: links)
            started = client
            var scopes = (q["scopes"] ?? "").split(separator: ",").map { String($0) }
            scopes.removeAll { $0.isEmpty }
            let redirectUri = try Self.handlerURL(configuration: configuration, request: request)
            let authorizationURL = try await flows.start(
                AuthorizationFlows.Start(
                    scope: scope, providerId: providerId, scopes: scopes,
                    customParameters: try Self.customParameters(q["customParameters"]), redirectUri: redirectUri,
                    continueUri: redirectUri, sessionHashes: sessionHashes, client: client,
                    clientIP: tokens.clientIP(request, context)),
                requestID: context.requestID, logger: context.logger)
            return AuthHandlerHTML.redirect(to: authorizationURL)
        } catch {
            let failure = HostedPage.firebaseError(error, page: "auth handler", logger: context.logger)
            // An SDK whose page or app was checked (an authorized domain's page, a listed app) gets the
            // error as its answer, as from Firebase's handler, instead of waiting for a browser the
            // user must close: the web SDK as its auth event, the mobile SDKs as `firebaseError`.
            guard let started else { return page.error(failure) }
            if started.platform == .web {
                return page.deliver(.object(Self.webEvent(started, scope: scope, error: failure)), client: started)
            }
            let base = (try? Self.handlerURL(configuration: configuration, request: request)) ?? ""
            return page.toApp(Self.appURL(started, base: base, answer: ("firebaseError", Self.errorJSON(failure))))
        }
    }

    /// The SDK's client from its parameters, and the session ids that may redeem the flow.
    func client(_ q: [String: String], links: ActionLinks) throws -> (AuthFlowClient, [String]) {
        func required(_ name: String) throws -> String {
            guard let value = q[name], !value.isEmpty, value.utf8.count <= 512 else {
                throw FirebaseError.invalid(.invalidArgument, "The handler needs \(name).")
            }
            return value
        }
        if q["ibi"] != nil {
            var client = AuthFlowClient(platform: .ios, authType: q["authType"] ?? "signInWithRedirect")
            client.eventId = try required("eventId")
            // The Apple SDK sends the SHA-256 (hex) of the session id it redeems with (OAuthProvider.swift).
            let hashed = try required("sessionId").lowercased()
            guard hashed.count == 64, hashed.allSatisfy(\.isHexDigit) else {
                throw FirebaseError.invalid(.invalidArgument, "sessionId must be a SHA-256 in hex.")
            }
            // The scheme is made from the client id when the SDK sends one, else from the app id
            // (OAuthProvider.swift), exactly as the SDK will expect it.
            let source: String
            if let clientId = q["clientId"], !clientId.isEmpty {
                source = clientId
                client.callbackScheme = clientId.split(separator: ".").reversed().joined(separator: ".")
            } else if let appId = q["appId"], !appId.isEmpty {
                source = appId
                client.callbackScheme = "app-" + appId.replacingOccurrences(of: ":", with: "-")
            } else {
                throw FirebaseError.invalid(.invalidArgument, "The handler needs clientId or appId.")
            }
            guard let scheme = client.callbackScheme, Self.isScheme(scheme) else {
                throw FirebaseError.invalid(.invalidArgument, "clientId or appId does not make a URL scheme.")
            }
            // The answer goes to whichever app claims the scheme: the scheme, or what it was made from,
            // must be listed, whatever bundle id or other id the link names.
            try checkApp([scheme, source])
            client.language = q["hl"]
            return (client, [hashed])
        }
        if let package = q["apn"] {
            // The intent names the package that receives the answer.
            try checkApp([package])
            var client = AuthFlowClient(platform: .android, authType: q["authType"] ?? "signInWithRedirect")
            client.eventId = try required("eventId")
            client.androidPackage = package
            // Whether the Android SDK sends the session id or its SHA-256 cannot be read from its
            // (closed) sources: either redeems.
            let session = try required("sessionId")
            var hashes = [AuthorizationFlows.hexDigest(session)]
            if session.count == 64, session.allSatisfy(\.isHexDigit) { hashes.append(session.lowercased()) }
            return (client, hashes)
        }
        let authType = try required("authType")
        guard Self.webAuthTypes.contains(authType) else {
            throw FirebaseError.invalid(.invalidArgument, "authType is not one the SDK sends.")
        }
        var client = AuthFlowClient(platform: .web, authType: authType)
        client.apiKey = configuration.apiKey
        client.appName = try required("appName")
        client.eventId = q["eventId"].flatMap { $0.isEmpty ? nil : $0 }
        if authType != "signInViaRedirect", client.eventId == nil {
            throw FirebaseError.invalid(.invalidArgument, "The handler needs eventId.")
        }
        // The app's page: where a redirect returns, and which domain the sign-in is for.
        client.redirectUrl = try links.checkContinueURL(try required("redirectUrl"))
        let session = Base64URL.encode(Secrets.randomBytes(24))
        client.sessionId = session
        return (client, [AuthorizationFlows.hexDigest(session)])
    }

    /// Mobile apps sign in through the handler only when the operator lists them
    /// (`TESSERA_AUTHORIZED_APPS`): the answer goes to whichever app claims the URL scheme (iOS) or
    /// the package (Android), so a link that starts a flow for someone else's app must not work.
    func checkApp(_ identifiers: [String]) throws {
        guard identifiers.contains(where: configuration.authorizedApps.contains) else {
            throw FirebaseError.invalid(
                .unauthorizedDomain,
                "The app \(identifiers.first?.prefix(100) ?? "") is not one of TESSERA_AUTHORIZED_APPS.")
        }
    }

    static func isScheme(_ text: String) -> Bool {
        guard let first = text.first, first.isASCII, first.isLetter, text.count <= 200 else { return false }
        return text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }

    /// The SDK's `customParameters`: a JSON object (strings; numbers and booleans as text).
    static func customParameters(_ text: String?) throws -> [String: String] {
        guard let text, !text.isEmpty else { return [:] }
        guard text.utf8.count <= 8192, let data = text.data(using: .utf8),
            case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: data)
        else { throw FirebaseError.invalid(.invalidArgument, "customParameters is not a JSON object.") }
        var result: [String: String] = [:]
        for (name, value) in object {
            switch value {
            case .string(let text): result[name] = text
            case .int(let number): result[name] = String(number)
            case .double(let number): result[name] = String(number)
            case .bool(let flag): result[name] = flag ? "true" : "false"
            default: continue
            }
        }
        return result
    }

    // MARK: The provider's answer

    /// The provider answered: the flow (left in place for `signInWithIdp` to consume) says where
    /// the answer goes. `link` is the answer as a URL on the handler: the callback URL itself, or
    /// for a `form_post` the handler's URL with the posted fields as its query.
    func answer(
        _ fields: [String: String], rawQuery: String?, postBody: String?, request: Request, context: TokenContext
    ) async -> Response {
        let language = AuthHandlerStrings.choose(lang: nil, acceptLanguage: request.headers[.acceptLanguage])
        var page = AuthHandlerHTML(language: language)
        guard let state = fields["state"], let scope = AuthorizationFlows.scope(ofState: state) else {
            return page.error(AuthorizationFlows.unknownFlow)
        }
        let flow: AuthFlow
        do {
            flow = try await tokens.directory.call(
                InternalEndpoints.getAuthFlow,
                AuthFlowRequest(scope: scope, stateHash: AuthorizationFlows.hexDigest(state)),
                requestID: context.requestID, logger: context.logger
            ).flow
        } catch {
            return page.error(HostedPage.firebaseError(error, page: "auth handler", logger: context.logger))
        }
        let answer = postBody ?? rawQuery ?? ""
        let link = flow.redirectUri + (answer.isEmpty ? "" : "?" + answer)
        guard let client = flow.client else {
            // An app's own flow (createAuthUri): the answer goes on to its continueUri.
            return AuthHandlerHTML.redirect(to: flow.continueUri + Self.joiner(flow.continueUri) + answer)
        }
        if let language = client.language {
            page = AuthHandlerHTML(language: AuthHandlerStrings.choose(lang: language, acceptLanguage: nil))
        }
        switch client.platform {
        case .web:
            var event = Self.webEvent(client, scope: scope, error: nil)
            if let postBody {
                event["urlResponse"] = .string(flow.redirectUri)
                event["postBody"] = .string(postBody)
            } else {
                event["urlResponse"] = .string(link)
            }
            return page.deliver(.object(event), client: client)
        case .ios, .android:
            return page.toApp(Self.appURL(client, base: flow.redirectUri, answer: ("link", link)))
        }
    }

    static func joiner(_ url: String) -> String { url.contains("?") ? "&" : "?" }

    /// The JS SDK's `AuthEvent` (`model/popup_redirect.ts`): every member present, null when unset.
    static func webEvent(_ client: AuthFlowClient, scope: Scope, error: FirebaseError?) -> [String: JSONValue] {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        var event: [String: JSONValue] = [
            "type": .string(client.authType), "eventId": text(client.eventId), "urlResponse": .null,
            "sessionId": text(client.sessionId), "postBody": .null, "tenantId": text(scope.tenantID), "error": .null,
        ]
        if let error {
            event["sessionId"] = .null
            event["error"] = .object([
                "code": .string(sdkCode(error)), "message": .string(error.message),
            ])
        }
        return event
    }

    /// The JS SDK's code for an error of the handler (`core/errors.ts`).
    static func sdkCode(_ error: FirebaseError) -> String {
        if error.status == .serviceUnavailable { return "auth/network-request-failed" }
        switch error.errorCode {
        case .unauthorizedDomain?: return "auth/unauthorized-domain"
        case .operationNotAllowed?, .projectDisabled?: return "auth/operation-not-allowed"
        case .invalidProviderId?: return "auth/invalid-provider-id"
        case .tenantNotFound?: return "auth/invalid-tenant-id"
        case .tooManyAttemptsTryLater?: return "auth/too-many-requests"
        case .invalidApiKey?: return "auth/invalid-api-key"
        case .invalidIdpResponse?: return "auth/invalid-credential"
        default: return "auth/internal-error"
        }
    }

    /// Back to a mobile SDK, with `answer` — `link` (the provider's answer as a URL on the handler)
    /// or `firebaseError` (JSON `{code, message}`) — beside `authType` and `eventId`:
    /// - the Apple SDK (`AuthWebUtils.isExpectedCallbackURL`, `OAuthProvider`):
    ///   `<scheme>://firebaseauth/link?deep_link_id=<URL whose query has them>`, every value
    ///   percent-encoded, so `link` is encoded twice;
    /// - the Android SDK: an intent for `GenericIdpActivity` (scheme `genericidp`, host
    ///   `firebase.auth`) with them as string extras, unencrypted (`encryptionEnabled=false`, as the
    ///   Firebase emulator's handler sends it: Tessera does not hold the app's key).
    static func appURL(_ client: AuthFlowClient, base: String, answer: (name: String, value: String)) -> String {
        let fields = [("authType", client.authType), ("eventId", client.eventId ?? ""), answer]
        if client.platform == .android {
            let extras = fields.map { "S.\($0.0)=\(FormURLEncoded.escape($0.1));" }.joined()
            return "intent://firebase.auth/#Intent;scheme=genericidp;package=\(client.androidPackage ?? "");"
                + extras + "B.encryptionEnabled=false;end"
        }
        let inner = (WebURL(base)?.origin ?? base) + "/__/auth/callback?" + FormURLEncoded.encode(fields)
        return (client.callbackScheme ?? "") + "://firebaseauth/link?deep_link_id=" + FormURLEncoded.escape(inner)
    }

    /// A refusal as the mobile SDKs read their `firebaseError`: the JS SDK's code, and the message.
    static func errorJSON(_ error: FirebaseError) -> String {
        let json: JSONValue = .object(["code": .string(sdkCode(error)), "message": .string(error.message)])
        return (try? JSONEncoder().encode(json)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    // MARK: The relay iframe

    @Sendable func iframe(_ request: Request, context: TokenContext) async throws -> Response {
        let q = Self.query(request)
        let page = AuthHandlerHTML(language: AuthHandlerStrings.choose(lang: nil, acceptLanguage: nil))
        guard let key = q["apiKey"], Secrets.constantTimeEquals(key, configuration.apiKey) else {
            return page.error(.invalid(.invalidApiKey))
        }
        guard let appName = q["appName"], !appName.isEmpty else {
            return page.error(.invalid(.invalidArgument))
        }
        let domains = try await tokens.currentLinks(requestID: context.requestID, logger: context.logger)
            .authorizedDomains
        return AuthHandlerHTML.iframe(frameAncestors: Self.frameAncestors(domains))
    }

    /// The pages that may embed the relay iframe: those of the authorized domains (any port and
    /// subdomain, as `continueUrl`s; an entry with a port, that port).
    static func frameAncestors(_ domains: [String]) -> String {
        var sources: [String] = []
        for entry in domains {
            guard let url = WebURL.authority(ofHostHeader: entry) else { continue }
            if case .ipv6 = url.host { continue }
            if url.port != nil {
                sources += ["http://\(url.authority)", "https://\(url.authority)"]
                continue
            }
            sources += ["http://\(url.hostString):*", "https://\(url.hostString):*"]
            if case .domain = url.host { sources += ["http://*.\(url.hostString):*", "https://*.\(url.hostString):*"] }
        }
        return sources.isEmpty ? "'none'" : sources.joined(separator: " ")
    }

    static func script(_ text: String) -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "text/javascript; charset=utf-8", .cacheControl: "public, max-age=300",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
