extension Migration {
    static let emailLinkSignIn = Migration(
        version: 13, name: "email_link_sign_in",
        statements: [
            // A user who signed in with an email link (docs/protocol/accounts.md#accounts-and-providers):
            // with an email, the `password` provider entry, with or without a password
            // (docs/protocol/accounts.md#the-user-record). A constant default: no rewrite.
            "ALTER TABLE users ADD COLUMN email_link_signin boolean NOT NULL DEFAULT false",
            // An EMAIL_SIGNIN code may be sent to an address no account has yet (it signs up).
            "ALTER TABLE oob_codes ALTER COLUMN local_id DROP NOT NULL",
        ])
}
