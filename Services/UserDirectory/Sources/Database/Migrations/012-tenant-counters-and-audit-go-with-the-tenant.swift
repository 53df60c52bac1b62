extension Migration {
    static let tenantCountersAndAuditGoWithTheTenant = Migration(
        version: 12, name: "tenant_counters_and_audit_go_with_the_tenant",
        statements: [
            // A deleted tenant's rate counters and audit entries went nowhere: housekeeping only
            // walks live tenants, and a later tenant given the same id would have read the old
            // entries. They now go with the tenant, like every other row of it. A deletion itself
            // is the project's entry: the earlier ones, written under the deleted tenant's id,
            // move to the project's log first (their target names the tenant); the rest of a
            // deleted tenant's rows go.
            """
            UPDATE audit_log a SET tenant_id = ''
            WHERE a.action = 'DELETE /v2/projects/{project}/tenants/{tenant}'
                AND NOT EXISTS (SELECT 1 FROM tenants t WHERE t.tenant_id = a.tenant_id)
            """,
            "DELETE FROM rate_counters r WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.tenant_id = r.tenant_id)",
            "DELETE FROM audit_log a WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.tenant_id = a.tenant_id)",
            // NOT VALID: no scan of the tables under the lock (the rows were just checked above);
            // new rows and deletions are held to the keys all the same.
            """
            ALTER TABLE rate_counters ADD FOREIGN KEY (tenant_id) REFERENCES tenants (tenant_id)
                ON DELETE CASCADE NOT VALID
            """,
            """
            ALTER TABLE audit_log ADD FOREIGN KEY (tenant_id) REFERENCES tenants (tenant_id)
                ON DELETE CASCADE NOT VALID
            """,
        ])
}
