import Foundation

/// The exit statuses scripts can rely on (docs/cli.md, `tessera --help`).
enum ExitStatus: Int32, Sendable {
    /// Done.
    case ok = 0
    /// The server refused the request (a Firebase error), or another failure.
    case failure = 1
    /// What was named does not exist (USER_NOT_FOUND, TENANT_NOT_FOUND, CONFIGURATION_NOT_FOUND, any 404).
    case notFound = 2
    /// No credential, or the credential was refused (401/403).
    case unauthorized = 3
    /// Some items of a batch failed (an import), the others went through.
    case partial = 4
    /// The admin plane could not be reached, timed out or answered 502/503/504.
    case unavailable = 5
    /// The command line is wrong (ArgumentParser's validation failures use it too, EX_USAGE).
    case usage = 64
}

/// A failure the command line reports as `tessera: <CODE> : <detail>` and exits with `status`.
struct CLIError: Error, CustomStringConvertible {
    /// A Firebase-style code: the server's own (`USER_NOT_FOUND`), or the command line's
    /// (`UNAVAILABLE`, `INVALID_ARGUMENT`, `UNAUTHENTICATED`, `PARTIAL_FAILURE`).
    var code: String
    var detail: String?
    var status: ExitStatus
    /// The HTTP status of the answer this error came from, if any.
    var httpStatus: Int?

    init(_ code: String, _ detail: String? = nil, status: ExitStatus = .failure, httpStatus: Int? = nil) {
        self.code = code
        self.detail = detail
        self.status = status
        self.httpStatus = httpStatus
    }

    var description: String {
        guard let detail, !detail.isEmpty else { return code }
        return "\(code) : \(detail)"
    }

    static func usage(_ detail: String) -> CLIError {
        CLIError("INVALID_ARGUMENT", detail, status: .usage)
    }

    static func notFound(_ code: String, _ detail: String) -> CLIError {
        CLIError(code, detail, status: .notFound)
    }

    /// Server error codes that mean "what you named does not exist" (exit 2).
    static let notFoundCodes: Set<String> = [
        "USER_NOT_FOUND", "TENANT_NOT_FOUND", "CONFIGURATION_NOT_FOUND", "CREDENTIAL_NOT_FOUND", "EMAIL_NOT_FOUND",
        "PROJECT_NOT_FOUND", "NOT_FOUND", "SERVICE_ACCOUNT_NOT_FOUND",
    ]

    /// Server error codes that are about the caller's credential or its rights (exit 3).
    static let permissionCodes: Set<String> = [
        "UNAUTHENTICATED", "PERMISSION_DENIED", "INSUFFICIENT_PERMISSION", "INVALID_CREDENTIALS",
    ]

    /// The error of a non-2xx answer: its Firebase message when it has one (`{"error":{"message":…}}`).
    static func server(status: Int, body: Data, url: String) -> CLIError {
        var message: String?
        var grpcStatus: String?
        if let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let error = object["error"] as? [String: Any]
        {
            message = error["message"] as? String
            grpcStatus = error["status"] as? String
        }
        let exit = exitStatus(http: status, message: message)
        guard let message, !message.isEmpty else {
            let code = grpcStatus ?? fallbackCode(http: status)
            return CLIError(
                code, "HTTP \(status) from \(url) without a Firebase error body", status: exit, httpStatus: status)
        }
        var (code, detail) = split(message)
        if !looksLikeCode(code) {
            // `Invalid Credentials`, `Not Found`: the gRPC status is the code, the message the detail.
            detail = message
            code = grpcStatus ?? fallbackCode(http: status)
        }
        if status == 404, code == "NOT_FOUND" {
            detail =
                (detail ?? "Not Found")
                + " (no such path on \(url); is --admin-url the admin plane? The public URL answers 404 to admin paths)"
        }
        return CLIError(code, detail, status: exit, httpStatus: status)
    }

    static func exitStatus(http: Int, message: String?) -> ExitStatus {
        let code = message.map { split($0).code } ?? ""
        if http == 401 || http == 403 || permissionCodes.contains(code) { return .unauthorized }
        if http == 404 || notFoundCodes.contains(code) { return .notFound }
        if [502, 503, 504].contains(http) { return .unavailable }
        return .failure
    }

    static func fallbackCode(http: Int) -> String {
        switch http {
        case 400: "INVALID_ARGUMENT"
        case 401: "UNAUTHENTICATED"
        case 403: "PERMISSION_DENIED"
        case 404: "NOT_FOUND"
        case 409: "ALREADY_EXISTS"
        case 429: "RESOURCE_EXHAUSTED"
        case 502, 503, 504: "UNAVAILABLE"
        default: "INTERNAL"
        }
    }

    /// `CODE : detail` → (`CODE`, `detail`); `CODE` → (`CODE`, nil).
    static func split(_ message: String) -> (code: String, detail: String?) {
        guard let range = message.range(of: " : ") else { return (message, nil) }
        return (String(message[..<range.lowerBound]), String(message[range.upperBound...]))
    }

    static func looksLikeCode(_ text: String) -> Bool {
        !text.isEmpty && text.allSatisfy { ($0.isASCII && ($0.isUppercase || $0.isNumber)) || $0 == "_" }
    }
}
