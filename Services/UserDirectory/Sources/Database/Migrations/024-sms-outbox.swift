extension Migration {
    static let smsOutbox = Migration(
        version: 24, name: "sms_outbox",
        statements: [
            // The durable SMS outbox (docs/design-notes.md, "SMS delivery"), shaped like `mail_outbox`. The
            // body carries a one-time code: it is cleared once the message is delivered or given up, and
            // `last_error` never holds it. `expires_at` is the code's: a message not delivered by then is
            // given up, never sent late.
            """
            CREATE TABLE sms_outbox (
                id bigserial PRIMARY KEY,
                tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
                to_number text NOT NULL,
                body text,
                created_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz NOT NULL,
                attempts integer NOT NULL DEFAULT 0,
                next_attempt_at timestamptz NOT NULL DEFAULT now(),
                claimed_until timestamptz,
                last_error text,
                delivered_at timestamptz,
                failed_at timestamptz
            )
            """,
            """
            CREATE INDEX sms_outbox_due_idx ON sms_outbox (next_attempt_at)
                WHERE delivered_at IS NULL AND failed_at IS NULL
            """,
            // Housekeeping prunes delivered and given-up messages per scope.
            """
            CREATE INDEX sms_outbox_done_idx ON sms_outbox (tenant_id, coalesce(delivered_at, failed_at))
                WHERE delivered_at IS NOT NULL OR failed_at IS NOT NULL
            """,
        ])
}
