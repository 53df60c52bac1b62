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
#   PGAF_TLS_DIR               ca.crt, server.crt and server.key (made by PGAF_ROLE=certificates, or
#                              yours): PostgreSQL serves that certificate, and pg_autoctl's own
#                              connections (to the monitor, replication, the monitor's health checks)
#                              verify it with sslmode=verify-full against ca.crt. A node made before
#                              it was set is switched over (`pg_autoctl enable ssl`) at its next start.
#                              Unset: pg_autoctl's self-signed certificates, which no client can verify
#                              (sslmode=require: encrypted, the server not authenticated)
#   PGAF_LISTEN (*: every interface of the container), PGAF_PORT (5432), PGDATA (/var/lib/postgresql/pgaf), PGHOST (the socket directory,
#   /var/run/postgresql)
#
# PGAF_ROLE=certificates makes those files and exits (compose's one-shot `pg-tls` service), as the
# postgres user of this image, so that PostgreSQL accepts the key's owner:
#   PGAF_TLS_HOSTNAMES         every name (or address) clients connect to, comma-separated: the
#                              monitor's and the nodes' PGAF_HOSTNAME, and the hosts of DATABASE_URL
#   PGAF_TLS_CA_DIR            the CA (ca.key, ca.crt; P-256, 10 years), made once; its key stays here
#   PGAF_TLS_DIR               the server's files: ca.crt, server.crt (every name above; 2 years),
#                              server.key (0600). Issued again when missing, not from the CA, short of a
#                              name, or in its last 30 days; restart the nodes to load a new one
#   PGAF_TLS_CLIENT_DIR        (optional) ca.crt alone, for the clients (DATABASE_URL's sslrootcert)
#
# Authentication: scram-sha-256 over TLS (hostssl) from PGAF_HBA_ADDRESS,
# peer on the local socket; pg_autoctl leaves pg_hba.conf alone (--skip-pg-hba).
# The passwords reach libpq through a password file, never a command line.
set -euo pipefail

role=${PGAF_ROLE:?PGAF_ROLE must be monitor, postgres or certificates}

log() { printf '%s pgaf-entrypoint: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# How openssl verify checks a name: an address (IPv4, or IPv6 with its colons) or a host name.
name_check() { if [[ $1 =~ ^[0-9.]+$ || $1 == *:* ]]; then echo -verify_ip; else echo -verify_hostname; fi; }

# PGAF_ROLE=certificates: the formation's CA and the server certificate (see above).
make_certificates() {
    local ca_dir=${PGAF_TLS_CA_DIR:?set PGAF_TLS_CA_DIR} dir=${PGAF_TLS_DIR:?set PGAF_TLS_DIR}
    local client_dir=${PGAF_TLS_CLIENT_DIR:-} names=() name san='' issue=0
    IFS=, read -r -a names <<<"${PGAF_TLS_HOSTNAMES:?set PGAF_TLS_HOSTNAMES: the names clients connect to}"
    ((${#names[@]})) || { log "PGAF_TLS_HOSTNAMES names no host"; return 1; }
    umask 077
    if [[ ! -s $ca_dir/ca.key || ! -s $ca_dir/ca.crt ]]; then
        log "making the formation's CA in $ca_dir"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
            -subj "/CN=Tessera pg_auto_failover CA" -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=critical,keyCertSign,cRLSign" \
            -keyout "$ca_dir/ca.key.tmp" -out "$ca_dir/ca.crt.tmp" 2>/dev/null
        mv -f "$ca_dir/ca.key.tmp" "$ca_dir/ca.key"
        mv -f "$ca_dir/ca.crt.tmp" "$ca_dir/ca.crt"
        issue=1
    fi
    if ((!issue)) && [[ -s $dir/server.key && -s $dir/server.crt ]] &&
        openssl x509 -checkend 2592000 -noout -in "$dir/server.crt" >/dev/null; then
        for name in "${names[@]}"; do
            openssl verify -CAfile "$ca_dir/ca.crt" -purpose sslserver "$(name_check "$name")" "$name" \
                "$dir/server.crt" >/dev/null 2>&1 || issue=1
        done
    else
        issue=1
    fi
    if ((issue)); then
        log "issuing the server certificate for ${PGAF_TLS_HOSTNAMES}"
        for name in "${names[@]}"; do
            if [[ $(name_check "$name") == -verify_ip ]]; then san+="IP:$name,"; else san+="DNS:$name,"; fi
        done
        printf '%s\n' "subjectAltName=${san%,}" "basicConstraints=critical,CA:FALSE" \
            "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >"$dir/server.ext"
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=${names[0]}" \
            -keyout "$dir/server.key.tmp" -out "$dir/server.csr" 2>/dev/null
        openssl x509 -req -in "$dir/server.csr" -CA "$ca_dir/ca.crt" -CAkey "$ca_dir/ca.key" \
            -CAserial "$ca_dir/ca.srl" -CAcreateserial -days 730 -extfile "$dir/server.ext" \
            -out "$dir/server.crt.tmp" 2>/dev/null
        rm -f "$dir/server.csr" "$dir/server.ext"
        mv -f "$dir/server.key.tmp" "$dir/server.key"
        mv -f "$dir/server.crt.tmp" "$dir/server.crt"
    fi
    local target
    for target in "$dir" ${client_dir:+"$client_dir"}; do
        cp "$ca_dir/ca.crt" "$target/ca.crt.tmp" && mv -f "$target/ca.crt.tmp" "$target/ca.crt"
        chmod 0644 "$target/ca.crt"
    done
    chmod 0644 "$dir/server.crt"
    chmod 0600 "$dir/server.key"
    log "TLS files ready: $dir${client_dir:+, $client_dir/ca.crt}"
}

if [[ $role == certificates ]]; then
    make_certificates
    exit 0
fi
export PGDATA=${PGDATA:-/var/lib/postgresql/pgaf}
export PGHOST=${PGHOST:-/var/run/postgresql}
export PGPASSFILE=${PGPASSFILE:-$HOME/.pgpass}
port=${PGAF_PORT:-5432}
hostname=${PGAF_HOSTNAME:?PGAF_HOSTNAME must name this node as the others reach it}
monitor_password=${PGAF_MONITOR_PASSWORD:?set PGAF_MONITOR_PASSWORD}

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

# TLS: the certificate in PGAF_TLS_DIR, verified by pg_autoctl's connections, or self-signed ones.
if [[ -n ${PGAF_TLS_DIR:-} ]]; then
    for file in ca.crt server.crt server.key; do
        [[ -r $PGAF_TLS_DIR/$file ]] || { log "no readable $PGAF_TLS_DIR/$file (PGAF_TLS_DIR)"; exit 1; }
    done
    ssl_options=(--ssl-ca-file "$PGAF_TLS_DIR/ca.crt" --server-cert "$PGAF_TLS_DIR/server.crt"
        --server-key "$PGAF_TLS_DIR/server.key" --ssl-mode verify-full)
    monitor_ssl="sslmode=verify-full&sslrootcert=$PGAF_TLS_DIR/ca.crt"
else
    ssl_options=(--ssl-self-signed)
    monitor_ssl="sslmode=require"
fi

create() {
    created && return 0
    if [[ $role == monitor ]]; then
        own_initdb
        log "creating the monitor"
        pg_autoctl create monitor --pgdata "$PGDATA" --pgport "$port" --listen "${PGAF_LISTEN:-*}" --hostname "$hostname" \
            --skip-pg-hba "${ssl_options[@]}"
    else
        if [[ ${PGAF_INITDB:-0} == 1 ]]; then own_initdb; fi
        log "creating node ${PGAF_NAME:?set PGAF_NAME}"
        pg_autoctl create postgres --pgdata "$PGDATA" --pgport "$port" --listen "${PGAF_LISTEN:-*}" --pghost "$PGHOST" \
            --hostname "$hostname" --name "$PGAF_NAME" --skip-pg-hba "${ssl_options[@]}" \
            --monitor "postgres://autoctl_node@${PGAF_MONITOR_HOST:-pg-monitor}:${PGAF_MONITOR_PORT:-5432}/pg_auto_failover?$monitor_ssl"
    fi
}

# A node made with other TLS settings (before PGAF_TLS_DIR was set: self-signed, sslmode=require)
# takes these: PostgreSQL's certificate, pg_autoctl's sslmode and sslrootcert, the monitor URI.
switch_tls() {
    [[ -n ${PGAF_TLS_DIR:-} ]] || return 0
    [[ $(pg_autoctl config get --pgdata "$PGDATA" ssl.ca_file 2>/dev/null) != "$PGAF_TLS_DIR/ca.crt" ]] || return 0
    log "switching to the certificate in $PGAF_TLS_DIR (sslmode=verify-full)"
    pg_autoctl enable ssl --pgdata "$PGDATA" "${ssl_options[@]}"
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
switch_tls
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
