import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NIOCore
import TesseraShared

/// Renders the console's pages (`ConsolePage`, with `ConsoleTemplates`) into responses.
public struct ConsoleViews: Sendable {
    let library: MustacheLibrary

    public init() throws {
        library = try ConsoleTemplates.library()
    }

    /// `page` rendered by its template, as an HTML answer.
    public func render(_ page: some ConsolePage, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: html(page))))
    }

    /// A page's HTML; empty for a template that does not exist.
    func html<Page: ConsolePage>(_ page: Page) -> String {
        library.render(page, withTemplate: Page.template) ?? ""
    }

    public func error(_ status: HTTPResponse.Status, heading: String, message: String) -> Response {
        render(ErrorPage(heading: heading, message: message), status: status)
    }

    /// An API error in words: the code's message where it is the admin's to fix, generic otherwise.
    public func error(for error: FirebaseError) -> Response {
        switch error.status.code {
        case 403:
            return self.error(
                .forbidden, heading: "Not allowed",
                message: "Your credential does not give access to this page or action.")
        case 401:
            return self.error(.unauthorized, heading: "Sign in again", message: "Your session is not valid.")
        case 429:
            return self.error(
                .tooManyRequests, heading: "Too many attempts", message: "Too many attempts; try again later.")
        case 503:
            return self.error(
                .serviceUnavailable, heading: "Unavailable", message: "The service is unavailable; retry shortly.")
        case 400..<500:
            let code = error.errorCode
            if code == .tenantNotFound || code == .userNotFound {
                return self.error(.notFound, heading: "Not found", message: "There is no such tenant or user.")
            }
            if code == .projectDisabled {
                return self.error(
                    error.status, heading: "Sign-in is off",
                    message: "This tenant's sign-in is disabled, and its users cannot be managed until it is "
                        + "turned back on in the tenant's settings.")
            }
            return self.error(error.status, heading: "Request refused", message: error.message)
        default:
            return self.error(
                .internalServerError, heading: "Something went wrong",
                message: "The console could not finish this request; it has been logged.")
        }
    }
}
