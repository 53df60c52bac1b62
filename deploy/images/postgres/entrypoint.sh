#!/bin/sh
# The first start makes the cluster in PGDATA (initdb with POSTGRES_INITDB_ARGS; POSTGRES_USER, the
# superuser, with POSTGRES_PASSWORD; the database POSTGRES_DB), accepting password connections
# (scram-sha-256) from anywhere the container's network lets reach it; every start then runs the
# command, `postgres` by default. Runs as the image's postgres user.
set -eu

: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
user=${POSTGRES_USER:-postgres}
database=${POSTGRES_DB:-$user}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of arguments, as in the official image.
    initdb --username="$user" --pwfile="$pwfile" ${POSTGRES_INITDB_ARGS:-} >/dev/null
    rm -f "$pwfile"
    {
        echo "listen_addresses = '*'"
        echo "unix_socket_directories = '/var/run/postgresql'"
    } >> "$PGDATA/postgresql.auto.conf"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$database" != postgres ]; then
        # The server, on its socket only, for the one statement.
        pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
        psql -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres -q \
            -c "CREATE DATABASE \"$database\" OWNER \"$user\""
        pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    fi
    echo "postgres-entrypoint: cluster made in $PGDATA"
fi

if [ "${1:-}" = postgres ]; then
    shift
    exec postgres -D "$PGDATA" "$@"
fi
exec "$@"
