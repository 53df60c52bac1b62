extension Migration {
    static let linkedAccountsArePermanent = Migration(
        version: 21, name: "linked_accounts_are_permanent",
        statements: [
            // An admin's linkProviderUserInfo left an anonymous account marked anonymous, and the
            // cleanup deleted it when due; linking now ends anonymity (`AccountRows.link`). This
            // mends the accounts linked that way before.
            """
            UPDATE users u SET is_anonymous = false, anonymous_due_at = NULL
            WHERE u.is_anonymous AND EXISTS (
                SELECT 1 FROM provider_links l WHERE l.tenant_id = u.tenant_id AND l.local_id = u.local_id)
            """
        ])
}
