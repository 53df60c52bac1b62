/// A scope's mail templates, each with its form and a preview (`templates`).
public struct TemplatesPage: ConsolePage {
    public static let template = "templates"
    let title = "Mail templates"
    let chrome: ConsoleChrome
    let notice: String?
    let types: [MailType]

    public init(chrome: ConsoleChrome, notice: String?, types: [MailType]) {
        self.chrome = chrome
        self.notice = notice
        self.types = types
    }

    /// One type of mail: its template (or the draft that was refused, with why) and the preview.
    public struct MailType: Sendable {
        /// The type's wire name (`VERIFY_EMAIL`, …), also the section's HTML id.
        let type: String
        let label: String
        let subject: String
        let body: String
        /// Whether the scope has its own template (else the built-in one is shown).
        let custom: Bool
        let previewSubject: String
        let previewBody: String
        let error: String?

        public init(
            type: String, label: String, subject: String, body: String, custom: Bool, previewSubject: String,
            previewBody: String, error: String?
        ) {
            self.type = type
            self.label = label
            self.subject = subject
            self.body = body
            self.custom = custom
            self.previewSubject = previewSubject
            self.previewBody = previewBody
            self.error = error
        }
    }
}
