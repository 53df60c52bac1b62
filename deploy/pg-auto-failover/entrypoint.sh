#!/usr/bin/env bash
# One pg_auto_failover node in a container (deploy/compose.pg-ha.yaml; the same image and script suit a
# Kubernetes StatefulSet, docs/deployment.md): creates the node on its first start, then runs it
# (`pg_autoctl run`: the keeper and its PostgreSQL) until it is told to stop. Runs as `postgres`.
#
#   PGAF_ROLE                  monitor | postgres
#   PGAF_HOSTNAME              the name the other nodes and the monitor reach this one by (a service name)
#   PGAF_NAME                  (postgres) the node's name in the formation, e.g. node1
#   PGAF_MONITOR_HOST, PGAF_MONITOR_PORT  (postgres) where the monitor is (pg-monitor, 5432)
#   PGAF_INITDB=1              (postgres) make the cluster ourselves before `pg_autoctl create`: for the
#                              node created first, which becomes the primary (UTF8, locale C, as the
#                              single PostgreSQL). The others stay empty and are made by pg_autoctl
#                              with pg_basebackup of the primary, its settings and pg_hba.conf included.
#   PGAF_MONITOR_PASSWORD      the password of autoctl_node (the nodes' connections to the monitor)
#   PGAF_REPLICATION_PASSWORD  (postgres) the password of pgautofailover_replicator (replication,
#                              pg_basebackup, pg_rewind; a superuser, so never without a password)
#   POSTGRES_PASSWORD          (postgres) the application role `tessera`'s password: the role and the
#                              databases `tessera` are made (and the passwords set) on the primary at
#                              every start, and replicate to the standby
#   PGAF_HBA_ADDRESS           where the nodes, the monitor and the application connect from (pg_hba.conf's
#                              address field): samenet (the default: the container's own networks, as
#                              on one compose network) or a CIDR (Kubernetes: the pod network's)
#   PGAF_LISTEN (*: every interface of the container), PGAF_PORT (5432), PGDATA (/var/lib/postgresql/pgaf), PGHOST (the socket directory,
#   /var/run/postgresql)
#
# Authentication: scram-sha-256 over TLS (hostssl) from PGAF_HBA_ADDRESS,
# peer on the local socket; pg_autoctl leaves pg_hba.conf alone (--skip-pg-hba). TLS: pg_autoctl's
# self-signed certificates (--ssl-self-signed; sslmode=require: encrypted, the server not verified;
# give your own with --ssl-ca-file/--server-cert/--server-key and sslmode=verify-full instead).
# The passwords reach libpq through a password file, never a command line.
set -euo pipefail

role=${PGAF_ROLE:?PGAF_ROLE must be monitor or postgres}
export PGDATA=${PGDATA:-/var/lib/postgresql/pgaf}
export PGHOST=${PGHOST:-/var/run/postgresql}
export PGPASSFILE=${PGPASSFILE:-$HOME/.pgpass}
port=${PGAF_PORT:-5432}
hostname=${PGAF_HOSTNAME:?PGAF_HOSTNAME must name this node as the others reach it}
monitor_password=${PGAF_MONITOR_PASSWORD:?set PGAF_MONITOR_PASSWORD}

log() { printf '%s pgaf-entrypoint: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

sql_literal() { local v=$1; printf "'%s'" "${v//\'/\'\'}"; }

psql_local() { # [database] — SQL on stdin, over the socket as the cluster owner
    psql -X -q -v ON_ERROR_STOP=1 -h "$PGHOST" -p "$port" -d "${1:-postgres}"
}

# pg_autoctl's configuration and an unfinished initialisation (it keys them by PGDATA's path).
created() {
    [[ -s ${XDG_CONFIG_HOME:-$HOME/.config}/pg_autoctl$PGDATA/pg_autoctl.cfg &&
        ! -e ${XDG_DATA_HOME:-$HOME/.local/share}/pg_autoctl$PGDATA/pg_autoctl.init ]]
}

write_pgpass() {
    (
        umask 077
        {
            printf '*:*:pg_auto_failover:autoctl_node:%s\n' "$monitor_password"
            if [[ -n ${PGAF_REPLICATION_PASSWORD:-} ]]; then
                printf '*:*:*:pgautofailover_replicator:%s\n' "$PGAF_REPLICATION_PASSWORD"
            fi
        } >"$PGPASSFILE.tmp"
        mv -f "$PGPASSFILE.tmp" "$PGPASSFILE"
    )
}

# Our own cluster: initdb's peer/scram-sha-256 rules plus TLS ones for the containers' network;
# postgresql.auto.conf comes after pg_autoctl's postgresql-auto-failover.conf, whose defaults include
# password_encryption = md5 (which scram-sha-256 rules would refuse).
own_initdb() {
    [[ -f $PGDATA/PG_VERSION ]] && return 0
    log "initdb $PGDATA"
    initdb -D "$PGDATA" --auth-local=peer --auth-host=scram-sha-256 -E UTF8 --locale=C >/dev/null
    local address=${PGAF_HBA_ADDRESS:-samenet}
    cat >>"$PGDATA/pg_hba.conf" <<HBA
# pg_auto_failover (deploy/pg-auto-failover/entrypoint.sh): the nodes, the monitor and the
# application, over TLS
hostssl all             all             $address                 scram-sha-256
hostssl replication     all             $address                 scram-sha-256
HBA
    {
        echo "unix_socket_directories = '$PGHOST'"
        echo "password_encryption = 'scram-sha-256'"
    } >>"$PGDATA/postgresql.auto.conf"
}

create() {
    created && return 0
    if [[ $role == monitor ]]; then
        own_initdb
        log "creating the monitor"
        pg_autoctl create monitor --pgdata "$PGDATA" --pgport "$port" --listen "${PGAF_LISTEN:-*}" --hostname "$hostname" \
            --skip-pg-hba --ssl-self-signed
    else
        if [[ ${PGAF_INITDB:-0} == 1 ]]; then own_initdb; fi
        log "creating node ${PGAF_NAME:?set PGAF_NAME}"
        pg_autoctl create postgres --pgdata "$PGDATA" --pgport "$port" --listen "${PGAF_LISTEN:-*}" --pghost "$PGHOST" \
            --hostname "$hostname" --name "$PGAF_NAME" --skip-pg-hba --ssl-self-signed \
            --monitor "postgres://autoctl_node@${PGAF_MONITOR_HOST:-pg-monitor}:${PGAF_MONITOR_PORT:-5432}/pg_auto_failover?sslmode=require"
    fi
}

# Waits for the local PostgreSQL, then, where it takes writes, sets the passwords (and, on a node,
# makes the application's role and databases). Idempotent; a standby gets all of it by replication.
provision() {
    local i in_recovery=''
    for ((i = 0; i < 600; i++)); do
        in_recovery=$(psql -X -At -h "$PGHOST" -p "$port" -d postgres -c 'SELECT pg_is_in_recovery()' 2>/dev/null || true)
        [[ -n $in_recovery ]] && break
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 1
    done
    if [[ $in_recovery != f ]]; then
        log "PostgreSQL is a standby (or did not start): nothing to provision here"
        return 0
    fi
    if [[ $role == monitor ]]; then
        psql_local pg_auto_failover <<SQL || return 1
SET password_encryption = 'scram-sha-256';
ALTER ROLE autoctl_node PASSWORD $(sql_literal "$monitor_password");
SQL
    else
        psql_local <<SQL || return 1
SET password_encryption = 'scram-sha-256';
ALTER ROLE pgautofailover_replicator PASSWORD $(sql_literal "${PGAF_REPLICATION_PASSWORD:?set PGAF_REPLICATION_PASSWORD}");
SELECT 'CREATE ROLE tessera LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tessera')\gexec
ALTER ROLE tessera WITH LOGIN PASSWORD $(sql_literal "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}");
SELECT 'CREATE DATABASE tessera OWNER tessera' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'tessera')\gexec
-- pg_basebackup of a standby that joins next starts with a spread checkpoint: little left to write
CHECKPOINT;
SQL
    fi
    log "provisioned (this node takes writes)"
}

write_pgpass
create
pg_autoctl run --pgdata "$PGDATA" &
pid=$!
# docker stop / Kubernetes send SIGTERM: pg_autoctl's fast stop (SIGINT) disconnects clients at once.
trap 'kill -INT "$pid" 2>/dev/null || true' TERM INT
provision || log "provisioning failed; it is tried again at the next start"
while :; do
    # wait returns early (status > 128) when a signal is trapped; then wait again for pg_autoctl.
    if wait "$pid"; then status=0; else status=$?; fi
    kill -0 "$pid" 2>/dev/null || break
done
exit "$status"
