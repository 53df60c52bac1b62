extension Migration {
    static let providerLinkEmails = Migration(
        version: 19, name: "provider_link_emails",
        statements: [
            // createAuthUri finds an account by its linked providers' emails too (issue 36): one
            // probe, not a scan of the tenant's links, on a path anyone can call.
            "CREATE INDEX provider_links_email_idx ON provider_links (tenant_id, email) WHERE email IS NOT NULL"
        ])
}
