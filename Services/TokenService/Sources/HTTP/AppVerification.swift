import Foundation
import Hummingbird
import Logging
import TesseraShared

/// The operator's reCAPTCHA v2 keys (`TESSERA_RECAPTCHA_SITE_KEY`, `TESSERA_RECAPTCHA_SECRET_KEY[_FILE]`,
/// docs/configuration.md): with them, a request that would text a code must carry a token reCAPTCHA's
/// `siteverify` accepts (docs/protocol/phone.md#app-verification).
public struct RecaptchaSettings: Sendable {
    public var siteKey: String
    public var secretKey: String
    /// Google's, unless the operator points elsewhere (a proxy, or a test's stand-in).
    public var verifyURL = "https://www.google.com/recaptcha/api/siteverify"

    public init(siteKey: String, secretKey: String) {
        self.siteKey = siteKey
        self.secretKey = secretKey
    }
}

/// App verification for the calls that text a code (`sendVerificationCode`, a phone factor's
/// `mfaEnrollment:start` and `mfaSignIn:start`; docs/protocol/phone.md#app-verification). Tessera can check
/// a reCAPTCHA token with the operator's keys; it cannot check Apple's APNs receipts or Google's Play
/// Integrity tokens, so without reCAPTCHA keys no proof is asked for and the SMS limits stand alone.
struct AppVerifier: Sendable {
    let recaptcha: RecaptchaSettings?
    let http: ProviderHTTP

    /// What `recaptchaParams` names when the operator gave no keys: the JS SDK's verifier needs a
    /// non-empty site key, and an app in test mode (`appVerificationDisabledForTesting`) uses none.
    static let placeholderSiteKey = "tessera-app-verification-off"

    var siteKey: String { recaptcha?.siteKey ?? Self.placeholderSiteKey }

    /// siteverify's answer, the members read.
    private struct SiteVerify: Decodable {
        var success: Bool
        var errorCodes: [String]?

        enum CodingKeys: String, CodingKey {
            case success
            case errorCodes = "error-codes"
        }
    }

    /// Nil when the request may text a code; otherwise why not (`MISSING_RECAPTCHA_TOKEN`,
    /// `CAPTCHA_CHECK_FAILED`), which the directory answers unless the number is one of the scope's
    /// test numbers. The token and the secret are never logged.
    func check(token: String?, clientIP: String?, logger: Logger) async throws -> ErrorCode? {
        guard let recaptcha else { return nil }
        guard let token, !token.isEmpty else { return .missingRecaptchaToken }
        guard token.utf8.count <= 8192 else { return .captchaCheckFailed }
        var form = [("secret", recaptcha.secretKey), ("response", token)]
        if let clientIP { form.append(("remoteip", clientIP)) }
        let answer: ProviderHTTP.Answer
        do {
            answer = try await http.post(recaptcha.verifyURL, form: form, logger: logger)
        } catch {
            throw FirebaseError.unavailable("reCAPTCHA could not be reached to check the token; retry shortly.")
        }
        guard answer.status == 200, let verdict = try? JSONDecoder().decode(SiteVerify.self, from: answer.body) else {
            logger.warning("reCAPTCHA siteverify answered unexpectedly", metadata: ["http.status": "\(answer.status)"])
            throw FirebaseError.unavailable("reCAPTCHA could not be reached to check the token; retry shortly.")
        }
        if verdict.success { return nil }
        logger.info(
            "reCAPTCHA token refused",
            metadata: ["recaptcha.errors": .string((verdict.errorCodes ?? []).prefix(4).joined(separator: ","))])
        return .captchaCheckFailed
    }
}

/// `v1/recaptchaParams` (v3 `getRecaptchaParam`): the site key the JS SDK's `RecaptchaVerifier` renders
/// its widget with (docs/protocol/phone.md#app-verification).
struct RecaptchaParamsController {
    let verifier: AppVerifier

    struct Params: Encodable, Sendable {
        var kind = "identitytoolkit#GetRecaptchaParamResponse"
        var recaptchaSiteKey: String
    }

    func addRoutes(to clients: RouterGroup<TokenContext>) {
        // GET, as the SDKs send it; POST too, as the v3 API took it.
        clients.client(.get, "v1/recaptchaParams", use: params)
        clients.client(.post, "v1/recaptchaParams", use: params)
    }

    @Sendable func params(_ request: Request, context: ClientContext) async throws -> JSONResponse<Params> {
        JSONResponse(Params(recaptchaSiteKey: verifier.siteKey))
    }
}
