import Foundation
import HTTPTypes
import Hummingbird
import TesseraShared

/// The hosted handler's pages (docs/oauth-flows.md): server-rendered in the page's language, with
/// the action page's stylesheet, scripts only from Tessera's origin, and what a page delivers as a
/// JSON data block. Every value from the request is escaped.
struct AuthHandlerHTML {
    let language: (code: String, strings: AuthHandlerStrings)

    var text: AuthHandlerStrings { language.strings }

    /// No inline script, no framing (the handler runs in a popup or a whole tab), nothing but this
    /// origin; the answer's code is in the URL, so no page it leads to learns it from a Referer. No
    /// `Cross-Origin-Opener-Policy`: the popup must keep its opener to reach the relay iframe.
    static let headers = HostedPage.headers(
        contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    )

    /// Off to the provider (or to an app's `continueUri`).
    static func redirect(to location: String) -> Response {
        Response(
            status: .found,
            headers: [
                .location: location, .cacheControl: "no-store", HTTPField.Name("Referrer-Policy")!: "no-referrer",
            ])
    }

    /// The error's page, with its status (400 for a refusal, 503 with `Retry-After` for a
    /// dependency that is down).
    func error(_ error: FirebaseError) -> Response {
        let message: String
        switch error.errorCode {
        case .invalidApiKey?: message = text.invalidApiKey
        case .unauthorizedDomain?:
            message = error.message.contains("TESSERA_AUTHORIZED_APPS") ? text.unauthorizedApp : text.unauthorizedDomain
        case .operationNotAllowed?, .projectDisabled?, .tenantNotFound?, .invalidProviderId?: message = text.notAllowed
        case .invalidIdpResponse?: message = text.expired
        case .invalidArgument?, .invalidContinueUri?: message = text.invalidRequest
        default: message = error.status == .serviceUnavailable ? text.unavailable : text.unknownError
        }
        var response = page(title: text.errorTitle, body: HostedPage.errorSection(error, message), status: error.status)
        if let retryAfter = error.retryAfterSeconds { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    /// The JS SDK's event, to the relay iframe (popup) or through this origin's storage (redirect).
    func deliver(_ event: JSONValue, client: AuthFlowClient) -> Response {
        let popup = client.authType.hasSuffix("ViaPopup")
        let apiKey = client.apiKey ?? ""
        let appName = client.appName ?? ""
        var data: [String: JSONValue] = [
            "mode": .string(popup ? "popup" : "redirect"), "authEvent": event, "apiKey": .string(apiKey),
            "appName": .string(appName), "storageKey": .string(apiKey + ":" + appName),
        ]
        if let redirectUrl = client.redirectUrl { data["redirectUrl"] = .string(redirectUrl) }
        let body = """
            <section id="result" data-outcome="working" role="status">
            <p data-state="working">\(Self.escape(text.signingIn))</p>
            <p data-state="done" hidden>\(Self.escape(text.popupDone))</p>
            <p data-state="no-opener" hidden>\(Self.escape(text.noOpener))</p>
            <p data-state="storage" hidden>\(Self.escape(text.storageBlocked))</p>
            </section>
            \(Self.dataBlock(.object(data)))
            <script src="\(AuthHandlerController.handlerScriptPath)"></script>

            """
        return page(title: text.pageTitle, body: body, status: .ok)
    }

    /// Back to a mobile app: its URL is followed at once, and offered as a link where a browser
    /// wants a tap before it opens an app.
    func toApp(_ url: String) -> Response {
        let body = """
            <section id="result" data-outcome="app" role="status">
            <p data-state="working">\(Self.escape(text.returningToApp))</p>
            <p><a id="return-to-app" href="\(Self.escape(url))">\(Self.escape(text.returnToApp))</a></p>
            </section>
            \(Self.dataBlock(.object(["mode": .string("app"), "url": .string(url)])))
            <script src="\(AuthHandlerController.handlerScriptPath)"></script>

            """
        return page(title: text.pageTitle, body: body, status: .ok)
    }

    /// The relay iframe: its script first (it sets `gapi_onload`), then gapi, which calls it.
    static func iframe(frameAncestors: String) -> Response {
        let html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <title>Tessera auth relay</title>
            <script src="\(AuthHandlerController.iframeScriptPath)"></script>
            <script src="https://apis.google.com/js/api.js"></script>
            </head>
            <body></body>
            </html>

            """
        let headers = HostedPage.headers(
            contentSecurityPolicy:
                "default-src 'none'; script-src 'self' https://apis.google.com https://www.gstatic.com; frame-src https://apis.google.com; connect-src https://apis.google.com; frame-ancestors \(frameAncestors); base-uri 'none'; form-action 'none'",
            framed: true)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// JSON inside `<script type="application/json">`: `<`, `>` and `&` escaped, so no value can end
    /// the element or start markup.
    static func dataBlock(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var json = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        json = json.replacingOccurrences(of: "<", with: "\\u003c").replacingOccurrences(of: ">", with: "\\u003e")
            .replacingOccurrences(of: "&", with: "\\u0026")
        return "<script id=\"tessera-auth-event\" type=\"application/json\">\(json)</script>"
    }

    func page(title: String, body: String, status: HTTPResponse.Status) -> Response {
        let html = HostedPage.document(
            language: language.code, rightToLeft: text.rightToLeft, title: title, heading: title, body: body)
        return Response(status: status, headers: Self.headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static func escape(_ text: String) -> String { ActionPageHTML.escape(text) }
}
