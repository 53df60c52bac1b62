import Foundation
import HTTPTypes
import Hummingbird
import TesseraShared

/// The action page's HTML: one small document per outcome (a form, a success, an error), in the
/// link's language, with the page's security headers. Every value from the request is escaped.
struct ActionPageHTML {
    let link: ActionPageController.Link
    let language: (code: String, strings: ActionPageStrings)
    /// The link's `continueUrl` when it is on an authorized domain; otherwise it is never offered.
    let continueURL: String?

    var text: ActionPageStrings { language.strings }

    /// Only this origin's stylesheet, forms posting to this origin, no framing, no scripts; the link's
    /// code is in the page's URL, so no page it leads to learns it from a Referer.
    static let headers = HostedPage.headers(
        contentSecurityPolicy:
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )

    func form(mode: ActionPageController.Mode, code: OobCodeResponse, csrf: String) -> Response {
        let (title, intro, button) = wording(mode)
        var html = "<form id=\"action-form\" method=\"post\" action=\"\(ActionPageController.path)\">\n"
        for (name, value) in [
            ("mode", mode.rawValue), ("oobCode", link.oobCode ?? ""), ("apiKey", link.apiKey ?? ""),
            ("tenantId", link.tenantId ?? ""), ("continueUrl", link.continueUrl ?? ""), ("lang", language.code),
            ("csrf", csrf),
        ] {
            html += "<input type=\"hidden\" name=\"\(name)\" value=\"\(Self.escape(value))\">\n"
        }
        switch mode {
        case .resetPassword:
            html += """
                <label for="newPassword">\(Self.escape(text.newPasswordLabel))</label>
                <input id="newPassword" name="newPassword" type="password" autocomplete="new-password" minlength="6" maxlength="4096" required>

                """
        case .signIn:
            html += """
                <label for="email">\(Self.escape(text.emailLabel))</label>
                <input id="email" name="email" type="email" autocomplete="email" required>

                """
        case .verifyEmail, .verifyAndChangeEmail, .recoverEmail:
            break
        }
        html += "<button id=\"submit\" type=\"submit\">\(Self.escape(button))</button>\n</form>\n"
        if mode == .signIn, let appLink = appLink() {
            html += "<p><a id=\"open-app\" href=\"\(Self.escape(appLink))\">\(Self.escape(text.openApp))</a></p>\n"
        }
        let filledIntro = fill(intro, email: code.email, newEmail: code.newEmail)
        return page(title: title, body: "<p>\(Self.escape(filledIntro))</p>\n" + html, status: .ok)
    }

    func success(mode: ActionPageController.Mode, email: String) -> Response {
        let (title, _, _) = wording(mode)
        let done: String
        switch mode {
        case .verifyEmail: done = text.verifyEmailDone
        case .resetPassword: done = text.resetPasswordDone
        case .verifyAndChangeEmail: done = text.changeEmailDone
        case .recoverEmail: done = text.recoverEmailDone
        case .signIn: done = text.signInDone
        }
        var body = """
            <section id="result" data-outcome="success" role="status">
            <p>\(Self.escape(fill(done, email: email, newEmail: email)))</p>

            """
        if let continueURL {
            body +=
                "<p><a id=\"continue\" href=\"\(Self.escape(continueURL))\">\(Self.escape(text.continueLink))</a></p>\n"
        }
        body += "</section>\n"
        return page(title: title, body: body, status: .ok)
    }

    func error(_ error: FirebaseError) -> Response {
        let message: String
        switch error.errorCode {
        case .invalidOobCode?: message = text.invalidCode
        case .expiredOobCode?: message = text.expiredCode
        case .weakPassword?: message = text.weakPassword
        case .invalidEmail?, .missingEmail?: message = text.emailMismatch
        case .userDisabled?: message = text.userDisabled
        case .operationNotAllowed?, .passwordLoginDisabled?, .adminOnlyOperation?, .projectDisabled?:
            message = text.notAllowed
        case .invalidMode?, .invalidApiKey?, .tenantNotFound?: message = text.invalidLink
        default: message = error.status == .serviceUnavailable ? text.unavailable : text.unknownError
        }
        var response = page(title: text.errorTitle, body: HostedPage.errorSection(error, message), status: error.status)
        if let retryAfter = error.retryAfterSeconds { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    /// A form posted without the token of the page it came from.
    func refused() -> Response {
        let body = """
            <section id="result" data-outcome="error" data-code="FORM_EXPIRED" role="alert">
            <p>\(Self.escape(text.formExpired))</p>
            </section>

            """
        return page(title: text.errorTitle, body: body, status: .forbidden)
    }

    func wording(_ mode: ActionPageController.Mode) -> (title: String, intro: String, button: String) {
        switch mode {
        case .verifyEmail: (text.verifyEmailTitle, text.verifyEmailIntro, text.verifyEmailButton)
        case .resetPassword: (text.resetPasswordTitle, text.resetPasswordIntro, text.resetPasswordButton)
        case .verifyAndChangeEmail: (text.changeEmailTitle, text.changeEmailIntro, text.changeEmailButton)
        case .recoverEmail: (text.recoverEmailTitle, text.recoverEmailIntro, text.recoverEmailButton)
        case .signIn: (text.signInTitle, text.signInIntro, text.signInButton)
        }
    }

    /// The continue URL with the link's parameters, so the app that opens it completes the sign-in
    /// itself (the SDKs read `mode`, `oobCode` and `apiKey` from it).
    func appLink() -> String? {
        guard let continueURL, var components = URLComponents(string: continueURL) else { return nil }
        var items = components.queryItems ?? []
        items.append(URLQueryItem(name: "apiKey", value: link.apiKey))
        items.append(URLQueryItem(name: "oobCode", value: link.oobCode))
        items.append(URLQueryItem(name: "mode", value: "signIn"))
        items.append(URLQueryItem(name: "lang", value: language.code))
        if let tenant = link.tenantId { items.append(URLQueryItem(name: "tenantId", value: tenant)) }
        components.percentEncodedQuery = items.map { item in
            "\(Self.queryEncode(item.name))=\(Self.queryEncode(item.value ?? ""))"
        }.joined(separator: "&")
        return components.string
    }

    func fill(_ text: String, email: String, newEmail: String?) -> String {
        text.replacingOccurrences(of: "%EMAIL%", with: email).replacingOccurrences(
            of: "%NEW_EMAIL%", with: newEmail ?? email)
    }

    func page(title: String, body: String, status: HTTPResponse.Status) -> Response {
        let html = HostedPage.document(
            language: language.code, rightToLeft: text.rightToLeft, title: "\(title) · \(text.pageTitle)",
            heading: title, body: body)
        return Response(status: status, headers: Self.headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    static func queryEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// Plain, legible, works in both directions (logical properties), no web fonts.
    static let stylesheet = """
        :root { color-scheme: light dark; font-family: system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans Thai", "Noto Naskh Arabic", sans-serif; }
        body { margin: 0; background: Canvas; color: CanvasText; }
        main { max-inline-size: 28rem; margin: 4rem auto; padding: 2rem; border: 1px solid GrayText; border-radius: 0.75rem; }
        h1 { font-size: 1.5rem; margin-block: 0 1rem; }
        p { line-height: 1.5; }
        form { display: grid; gap: 0.75rem; margin-block-start: 1rem; }
        label { font-weight: 600; }
        input[type=email], input[type=password] { font: inherit; padding: 0.6rem; border: 1px solid GrayText; border-radius: 0.4rem; }
        button { font: inherit; padding: 0.7rem 1rem; border: 0; border-radius: 0.4rem; background: #1a73e8; color: #fff; cursor: pointer; }
        button:focus-visible, a:focus-visible, input:focus-visible { outline: 3px solid #fbbc04; outline-offset: 2px; }
        #result[data-outcome=error] p { color: #c5221f; }
        #result[data-outcome=success] p { color: #137333; }
        @media (prefers-color-scheme: dark) { #result[data-outcome=error] p { color: #f28b82; } #result[data-outcome=success] p { color: #81c995; } }
        """
}
