import Foundation
import TesseraShared

/// The mail for each out-of-band request type. Placeholders as Firebase's templates:
/// `%APP_NAME%`, `%LINK%`, `%EMAIL%`, `%NEW_EMAIL%`, `%DISPLAY_NAME%`.
public struct MailTemplate: Sendable, Equatable, Codable {
    public var subject: String
    public var body: String

    public init(subject: String, body: String) {
        self.subject = subject
        self.body = body
    }

    public static func standard(_ type: OobRequestType) -> MailTemplate {
        switch type {
        case .passwordReset:
            MailTemplate(
                subject: "Reset your password for %APP_NAME%",
                body: """
                    Hello,

                    Follow this link to reset your %APP_NAME% password for your %EMAIL% account.

                    %LINK%

                    If you didn't ask to reset your password, you can ignore this email.

                    Thanks,

                    Your %APP_NAME% team
                    """)
        case .verifyEmail:
            MailTemplate(
                subject: "Verify your email for %APP_NAME%",
                body: """
                    Hello,

                    Follow this link to verify your email address.

                    %LINK%

                    If you didn't ask to verify this address, you can ignore this email.

                    Thanks,

                    Your %APP_NAME% team
                    """)
        case .verifyAndChangeEmail:
            MailTemplate(
                subject: "Verify your new email for %APP_NAME%",
                body: """
                    Hello,

                    Follow this link to verify %NEW_EMAIL% as the new sign-in email of your %APP_NAME% account.

                    %LINK%

                    If you didn't ask to change your email, you can ignore this email.

                    Thanks,

                    Your %APP_NAME% team
                    """)
        case .emailSignIn:
            MailTemplate(
                subject: "Sign in to %APP_NAME% requested at %EMAIL%",
                body: """
                    Hello,

                    We received a request to sign in to %APP_NAME% using this email address. Follow this link to sign in as %EMAIL%.

                    %LINK%

                    If you did not request this link, you can safely ignore this email.

                    Thanks,

                    Your %APP_NAME% team
                    """)
        case .recoverEmail:
            MailTemplate(
                subject: "Your sign-in email for %APP_NAME% was changed",
                body: """
                    Hello,

                    The sign-in email of your %APP_NAME% account was changed from %EMAIL% to %NEW_EMAIL%.

                    If you didn't ask to change it, follow this link to restore %EMAIL% as your sign-in email and sign out everywhere else:

                    %LINK%

                    Then reset your password, in case someone else knows it.

                    Thanks,

                    Your %APP_NAME% team
                    """)
        }
    }

    func render(appName: String, link: String, email: String, newEmail: String?, displayName: String?)
        -> MailMessage.Parts
    {
        func fill(_ text: String) -> String {
            text.replacingOccurrences(of: "%APP_NAME%", with: appName)
                .replacingOccurrences(of: "%LINK%", with: link)
                .replacingOccurrences(of: "%EMAIL%", with: email)
                .replacingOccurrences(of: "%NEW_EMAIL%", with: newEmail ?? email)
                .replacingOccurrences(of: "%DISPLAY_NAME%", with: displayName ?? "")
        }
        // A subject is one line: line breaks and other control characters of filled-in values
        // (a display name is the user's to choose) become spaces.
        let oneLine = String(
            String.UnicodeScalarView(
                fill(subject).unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
        return MailMessage.Parts(subject: oneLine, body: fill(body))
    }
}

extension MailMessage {
    struct Parts {
        var subject: String
        var body: String
    }
}
