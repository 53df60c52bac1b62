import Foundation
import HTTPTypes
import Hummingbird
import Logging
import TesseraShared

/// What Tessera's hosted pages share — the action page (`/__/auth/action`) and the auth handler
/// (`/__/auth/handler`, its relay iframe): the document around a page's body, its security headers
/// (each page its own CSP), and how an error becomes what a page shows.
enum HostedPage {
    /// No caching, no Referer (the pages' URLs carry codes), no sniffing; no framing unless the page
    /// is meant to be framed (the relay iframe, whose CSP names who may).
    static func headers(contentSecurityPolicy: String, framed: Bool = false) -> HTTPFields {
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .contentSecurityPolicy: contentSecurityPolicy,
            .cacheControl: "no-store", HTTPField.Name("Referrer-Policy")!: "no-referrer",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        ]
        if !framed { headers[HTTPField.Name("X-Frame-Options")!] = "DENY" }
        return headers
    }

    /// A page in the action page's layout and stylesheet, in `language` (right to left when it is).
    static func document(language: String, rightToLeft: Bool, title: String, heading: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="\(language)" dir="\(rightToLeft ? "rtl" : "ltr")">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>\(ActionPageHTML.escape(title))</title>
        <link rel="stylesheet" href="\(ActionPageController.stylesheetPath)">
        </head>
        <body>
        <main>
        <h1>\(ActionPageHTML.escape(heading))</h1>
        \(body)</main>
        </body>
        </html>

        """
    }

    /// An error's section: its code for tests and support (`INTERNAL` for anything unexpected, never
    /// its detail) and the page's words for it.
    static func errorSection(_ error: FirebaseError, _ message: String) -> String {
        let code = error.status == .internalServerError ? "INTERNAL" : error.code
        return """
            <section id="result" data-outcome="error" data-code="\(ActionPageHTML.escape(code))" role="alert">
            <p>\(ActionPageHTML.escape(message))</p>
            </section>

            """
    }

    /// What went wrong, as the Firebase error the API would have answered; anything unexpected is
    /// logged (the page never shows it) and shown as a generic failure.
    static func firebaseError(_ error: any Error, page: String, logger: Logger) -> FirebaseError {
        if let error = error as? FirebaseError { return error }
        logger.error(
            "hosted page failed",
            metadata: ["page": .string(page), "error.type": .string(String(describing: type(of: error)))])
        return FirebaseError.internal
    }
}
