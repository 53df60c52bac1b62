extension Migration {
    static let rateLimits = Migration(
        version: 8, name: "rate_limits",
        statements: [
            // Fixed-window counters shared by every replica; keys are hashed addresses and emails.
            """
            CREATE TABLE rate_counters (
                tenant_id text NOT NULL,
                bucket text NOT NULL,
                key text NOT NULL,
                window_start timestamptz NOT NULL,
                count integer NOT NULL,
                PRIMARY KEY (tenant_id, bucket, key, window_start)
            )
            """,
            "CREATE INDEX rate_counters_window_idx ON rate_counters (tenant_id, window_start)",
            // A scope's overrides of the default limits (JSON); NULL = the defaults.
            "ALTER TABLE tenants ADD COLUMN rate_limits text",
        ])
}
