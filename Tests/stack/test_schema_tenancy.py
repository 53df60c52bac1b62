"""The schema can be distributed by tenant (issue #26; docs/scaling.md, "Past one PostgreSQL primary").

A sharded PostgreSQL (Citus) places a table's rows by one distribution column and requires it in
every primary key, unique key and foreign key of the table, so that each of them is checked on one
shard. Tessera's distribution column is `tenant_id`: these tests read the LIVE schema of the stack's
database from pg_catalog and require every primary key, unique constraint, unique index, exclusion
constraint and foreign key of every application table to lead with `tenant_id` (NOT NULL, one type
everywhere), so that a new table or key that would pin the schema to one server fails here.

There are two kinds of exception, each with its reason, and neither may rot: an entry that names a
table that no longer exists, or one that complies now, fails too.

- REFERENCE_TABLES: small, global tables that a distributed deployment replicates to every node
  (Citus reference tables). Their keys are not checked, but a reference table may only reference
  `tenants` or another reference table (Citus refuses a reference table's foreign key to a
  distributed table), so `tenants` itself must be a reference table too.
- PRIMARY_KEYS_TO_FIX: tenant-owned tables whose primary key does not lead with `tenant_id` yet; to
  be moved to `(tenant_id, …)` by a migration. Only the primary key is excused: their other keys are
  held to the rule.

The project's default scope is stored as `tenant_id = ''` (the `tenants` row with the empty id), never
NULL, in every tenant-owned table; NULL appears only in the admin-plane reference tables, where it
means a project-wide credential, not the default scope."""

from __future__ import annotations

import json
import uuid

from conftest import Admin, Stack, expect_ok, psql

TENANT = "tenant_id"

# Replicated to every node (Citus reference tables). A reason for each.
REFERENCE_TABLES: dict[str, str] = {
    "schema_migrations": "the migration ledger: one row per migration, global, written only by "
                         "`user-directory migrate`",
    "project_config": "the project's singleton settings row (and its Firebase-scrypt signer key); global by "
                      "definition",
    "tenants": "one row per tenant; every tenant-owned table and the admin-plane tables reference it, and a "
               "reference table can only reference a reference table. Its key is the tenant id itself (checked "
               "below)",
    "admin_credentials": "admin-plane credentials, found by the hash of the presented secret before the tenant is "
                         "known; tenant_id NULL = project-wide. Few rows, written rarely",
    "service_accounts": "custom-token signers, found by the token's key id (private_key_id) or client email before "
                        "the tenant is known; tenant_id NULL = project-wide. Few rows, written rarely",
    "console_sessions": "the admin console's sessions, found by the cookie's hash before the tenant is known; "
                        "tenant_id NULL = a project admin. One row per signed-in administrator",
    "cleanup_lease": "the cleanup worker's single lease row (one sweeper for the whole project)",
    "cleanup_sweeps": "one row per sweep of the whole project (the sweep id is the lease's fencing token)",
}

# Tenant-owned tables whose primary key does not lead with tenant_id yet. A reason for each.
PRIMARY_KEYS_TO_FIX: dict[str, str] = {
    "refresh_tokens": "PRIMARY KEY (token_hash): a refresh request carries only the opaque token, so the rotation "
                      "finds the tenant from the token's hash. Distributed, that lookup would visit every shard; "
                      "the token has to name its tenant (or shard) before the key can become (tenant_id, "
                      "token_hash)",
    "oob_codes": "PRIMARY KEY (code_hash): a code is read with its tenant (OobAccounts.readCode), so (tenant_id, "
                 "code_hash) needs the statements that use it up by hash alone to bind the tenant too",
    "mail_outbox": "PRIMARY KEY (id), a bigserial: (tenant_id, id) needs the sender (MailDispatcher) to take the "
                   "tenant from its claim and bind it in its updates by id; the claim reads all tenants either way",
    "sms_outbox": "PRIMARY KEY (id), a bigserial, as mail_outbox's and for its reason: the sender (SMSDispatcher) "
                  "claims across tenants and updates by id",
    "audit_log": "PRIMARY KEY (id), a bigserial: (tenant_id, id) is a key change only (audit_log_tenant_idx "
                 "already has those columns)",
}

SCHEMA_QUERY = r"""
WITH tables AS (
    SELECT c.oid, CASE WHEN n.nspname = 'public' THEN c.relname ELSE n.nspname || '.' || c.relname END AS name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%'
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                        AND d.deptype = 'e')
), keys AS (
    SELECT con.conrelid AS relid, con.contype::text AS kind, con.conname::text AS name,
        ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY k(attnum, i)
              JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.i) AS columns,
        CASE WHEN con.contype = 'f' THEN con.confrelid END AS target
    FROM pg_constraint con
    WHERE con.contype IN ('p', 'u', 'x', 'f') AND con.conrelid IN (SELECT oid FROM tables)
    UNION ALL
    -- unique indexes that back no constraint (CREATE UNIQUE INDEX, partial ones included)
    SELECT i.indrelid, 'i', ic.relname::text,
        ARRAY(SELECT coalesce(a.attname::text, '(expression)')
              FROM unnest((i.indkey::int2[])[0:i.indnkeyatts - 1]) WITH ORDINALITY k(attnum, o)
              LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.o),
        NULL
    FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
    WHERE i.indisunique AND i.indrelid IN (SELECT oid FROM tables)
        AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = i.indexrelid
                        AND con.conrelid = i.indrelid AND con.contype IN ('p', 'u', 'x'))
)
SELECT coalesce(json_agg(json_build_object(
    'table', t.name,
    'tenant_column', (SELECT json_build_object('not_null', a.attnotnull,
                                               'type', format_type(a.atttypid, a.atttypmod))
                      FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attname = 'tenant_id'
                          AND NOT a.attisdropped),
    'keys', (SELECT coalesce(json_agg(json_build_object(
                 'kind', k.kind, 'name', k.name, 'columns', k.columns,
                 'target', (SELECT tt.name FROM tables tt WHERE tt.oid = k.target)) ORDER BY k.kind, k.name), '[]')
             FROM keys k WHERE k.relid = t.oid)
) ORDER BY t.name), '[]')
FROM tables t
"""

KIND = {"p": "PRIMARY KEY", "u": "UNIQUE", "x": "EXCLUDE", "f": "FOREIGN KEY", "i": "UNIQUE INDEX"}


def live_schema(stack: Stack) -> dict[str, dict]:
    """Every application table of the stack's database: its tenant_id column (or None) and its keys."""
    tables = json.loads(psql(stack, SCHEMA_QUERY))
    assert tables, "no application tables found in the stack's database"
    return {t["table"]: t for t in tables}


def describe_key(table: str, key: dict) -> str:
    target = f" -> {key['target']}" if key["kind"] == "f" else ""
    return f"{table}: {KIND[key['kind']]} {key['name']} ({', '.join(key['columns'])}){target}"


def violations(table: dict, *, excuse_primary_key: bool = False) -> list[str]:
    """What keeps `table` from being distributed by tenant_id: keys that do not lead with it, and a
    missing, nullable tenant_id column or a missing primary key."""
    name = table["table"]
    found = []
    if table["tenant_column"] is None:
        found.append(f"{name}: no {TENANT} column")
    elif not table["tenant_column"]["not_null"]:
        found.append(f"{name}: {TENANT} is nullable (the default scope is '', never NULL)")
    if not excuse_primary_key and not any(k["kind"] == "p" for k in table["keys"]):
        found.append(f"{name}: no primary key")
    for key in table["keys"]:
        if key["kind"] == "p" and excuse_primary_key:
            continue
        if key["columns"][:1] != [TENANT]:
            found.append(describe_key(name, key))
    return found


def test_every_key_leads_with_the_tenant(stack: Stack):
    schema = live_schema(stack)
    found = []
    for name, table in schema.items():
        if name in REFERENCE_TABLES:
            continue
        found += violations(table, excuse_primary_key=name in PRIMARY_KEYS_TO_FIX)
    assert not found, (
        "keys that do not lead with tenant_id (the schema could no longer be distributed by tenant; "
        "docs/scaling.md). Put tenant_id first, or add the table to REFERENCE_TABLES or "
        "PRIMARY_KEYS_TO_FIX in this file with the reason:\n  " + "\n  ".join(found))


def test_the_exceptions_do_not_rot(stack: Stack):
    schema = live_schema(stack)
    stale = []
    assert not set(REFERENCE_TABLES) & set(PRIMARY_KEYS_TO_FIX), "a table is in both lists"
    for name in [*REFERENCE_TABLES, *PRIMARY_KEYS_TO_FIX]:
        if name not in schema:
            stale.append(f"{name}: no such table any more")
    # `tenants` complies by construction (its key is the tenant id): it is a reference table because the
    # admin-plane reference tables reference it, checked by test_reference_tables_reference_only_reference_tables.
    for name in REFERENCE_TABLES:
        if name in schema and name != "tenants" and not violations(schema[name]):
            stale.append(f"{name}: every key leads with {TENANT} now (a distributed table, not a reference table?)")
    for name in PRIMARY_KEYS_TO_FIX:
        if name in schema:
            primary = [k for k in schema[name]["keys"] if k["kind"] == "p"]
            if primary and primary[0]["columns"][:1] == [TENANT]:
                stale.append(f"{name}: its primary key {primary[0]['columns']} leads with {TENANT} now")
    assert not stale, "exception entries to remove from this file:\n  " + "\n  ".join(stale)


def test_the_tenants_table_is_keyed_by_the_tenant_id(stack: Stack):
    tenants = live_schema(stack)["tenants"]
    primary = [k["columns"] for k in tenants["keys"] if k["kind"] == "p"]
    assert primary == [[TENANT]], f"tenants' primary key is {primary}, not ({TENANT})"
    # The default scope is the row with the empty id: a real, non-null distribution value.
    assert psql(stack, "SELECT count(*) FROM tenants WHERE tenant_id = ''") == "1"
    assert psql(stack, "SELECT count(*) FROM tenants WHERE tenant_id IS NULL") == "0"


def test_reference_tables_reference_only_reference_tables(stack: Stack):
    """Citus refuses a foreign key from a reference table to a distributed table."""
    schema = live_schema(stack)
    wrong = [describe_key(name, key) for name in REFERENCE_TABLES if name in schema
             for key in schema[name]["keys"] if key["kind"] == "f" and key["target"] not in REFERENCE_TABLES]
    assert not wrong, "reference tables referencing distributed tables:\n  " + "\n  ".join(wrong)


def test_one_tenant_column_type(stack: Stack):
    """Co-located tables need one type of distribution column."""
    schema = live_schema(stack)
    types = {name: t["tenant_column"]["type"] for name, t in schema.items() if t["tenant_column"] is not None}
    assert set(types.values()) == {types["tenants"]}, f"tenant_id types differ: {types}"


def test_the_default_scope_is_stored_as_the_empty_tenant_id(stack: Stack, admin: Admin):
    """A project-level user's row carries tenant_id '' (not NULL): the default scope is one distribution value."""
    local_id = "schema" + uuid.uuid4().hex[:16]
    path = f"/v1/projects/{stack.project_id}/accounts:batchCreate"
    resp = admin.request("POST", path, json={"users": [{"localId": local_id}]})
    expect_ok(resp)
    try:
        assert psql(stack, f"SELECT coalesce(tenant_id, 'NULL') FROM users WHERE local_id = '{local_id}'") == ""
    finally:
        admin.delete_user_raw(None, local_id)
