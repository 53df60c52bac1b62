extension Migration {
    static let phoneNumbers = Migration(
        version: 4, name: "phone_numbers",
        statements: [
            "ALTER TABLE users ADD COLUMN phone_number text",
            """
            CREATE UNIQUE INDEX users_phone_key ON users (tenant_id, phone_number)
                WHERE phone_number IS NOT NULL
            """,
        ])
}
