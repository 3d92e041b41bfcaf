#!/usr/bin/env bash
# Makes sure the services sonde's tests talk to are up: PostgreSQL on
# 127.0.0.1:5432 (trust auth, database `test`) for the archive's tests.
# Starts a stopped local cluster; says what is missing otherwise.
# A second PostgreSQL on 127.0.0.1:5433 that accepts TLS only (hostssl,
# trust; role `root`, database `test`), its own cluster in
# /var/tmp/sonde-pg-tls (made here, with its own CA and a server
# certificate for localhost and 127.0.0.1 made with openssl; the CA is
# /var/tmp/sonde-pg-tls/certs/ca.pem): the archive's PostgreSQL tests run
# over TLS against it. Left alone if it is up; started if it is stopped.
# A PostgreSQL primary on 127.0.0.1:5434 and its streaming replica on
# 5435 (/var/tmp/sonde-pg-replica; role `root`, database `test`): the
# API's reads from a replica.
# And the MQTT broker (Mosquitto) on 127.0.0.1:1883 the readings' tests
# publish to: started (in the background, loopback only) if it is not up.
set -euo pipefail

mqtt_up() { (exec 3<>/dev/tcp/127.0.0.1/1883) 2>/dev/null; }
if ! mqtt_up; then
    if command -v mosquitto >/dev/null 2>&1; then
        mosquitto -d -p 1883 2>/dev/null || true
        for _ in $(seq 1 20); do mqtt_up && break; sleep 0.2; done
    fi
    mqtt_up || echo "services: no MQTT broker on 127.0.0.1:1883 (the readings' tests need one: Mosquitto)" >&2
fi

failed=0

# PostgreSQL, plain, on 5432: the system's cluster.
pg_plain() {
    if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
        return 0
    fi
    if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
        for version in /etc/postgresql/*; do
            pg_ctlcluster --skip-systemctl-redirect "$(basename "$version")" main start || true
        done
        for _ in $(seq 1 30); do
            pg_isready -q -h 127.0.0.1 -p 5432 && return 0
            sleep 1
        done
    fi
    echo "services: PostgreSQL is not reachable on 127.0.0.1:5432 (the archive's tests need it," >&2
    echo "          trust auth and a database 'test')" >&2
    return 1
}

# PostgreSQL over TLS only, on 5433: a cluster of our own, run by the
# `postgres` system user (the server refuses to run as root).
TLS_DIR=/var/tmp/sonde-pg-tls
TLS_DATA=$TLS_DIR/data
TLS_CERTS=$TLS_DIR/certs
TLS_PORT=5433

tls_up() { pg_isready -q -h 127.0.0.1 -p "$TLS_PORT" 2>/dev/null; }

# The directory of initdb, pg_ctl and psql: the newest installed version.
pg_bindir() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
    done
    command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 &&
        dirname "$(readlink -f "$(command -v initdb)")"
}

as_postgres() {
    if [ "$(id -un)" = postgres ]; then
        "$@"
    else
        runuser -u postgres -- "$@"
    fi
}

# A CA and a server certificate it signs (CN localhost; SAN localhost and
# 127.0.0.1), valid ten years. The CA's key is not kept.
tls_certs() {
    [ -s "$TLS_CERTS/ca.pem" ] && [ -s "$TLS_CERTS/server.pem" ] && [ -s "$TLS_CERTS/server.key" ] &&
        return 0
    local tmp
    tmp=$(mktemp -d)
    openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
        -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 3650 -subj "/CN=sonde test CA" \
        2>/dev/null || { rm -rf "$tmp"; return 1; }
    openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
        -keyout "$tmp/server.key" -out "$tmp/server.csr" -subj "/CN=localhost" 2>/dev/null ||
        { rm -rf "$tmp"; return 1; }
    printf '%s\n' 'basicConstraints=critical,CA:FALSE' \
        'keyUsage=critical,digitalSignature,keyEncipherment' \
        'extendedKeyUsage=serverAuth' 'subjectAltName=DNS:localhost,IP:127.0.0.1' >"$tmp/ext"
    openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
        -CAcreateserial -days 3650 -extfile "$tmp/ext" -out "$tmp/server.pem" 2>/dev/null ||
        { rm -rf "$tmp"; return 1; }
    install -d -m 0755 "$TLS_CERTS"
    # The key first, the CA last: ca.pem there means all three are.
    install -m 0600 -o postgres -g postgres "$tmp/server.key" "$TLS_CERTS/server.key" &&
        install -m 0644 "$tmp/server.pem" "$TLS_CERTS/server.pem" &&
        install -m 0644 "$tmp/ca.pem" "$TLS_CERTS/ca.pem"
    local rc=$?
    rm -rf "$tmp"
    return "$rc"
}

pg_tls() {
    tls_up && return 0
    if ! command -v openssl >/dev/null 2>&1; then
        echo "services: openssl is missing (scripts/system-deps.sh installs it); no PostgreSQL over TLS on 127.0.0.1:$TLS_PORT" >&2
        return 1
    fi
    local bin
    bin=$(pg_bindir) || bin=
    if [ -z "$bin" ] || ! id postgres >/dev/null 2>&1; then
        echo "services: no PostgreSQL server binaries (initdb, pg_ctl) or no 'postgres' user:" >&2
        echo "          no PostgreSQL over TLS on 127.0.0.1:$TLS_PORT (the archive's tests need it)" >&2
        return 1
    fi
    if [ "$(id -u)" -ne 0 ] && [ "$(id -un)" != postgres ]; then
        echo "services: PostgreSQL over TLS is not up on 127.0.0.1:$TLS_PORT; run this as root to" >&2
        echo "          make and start it (cluster in $TLS_DATA)" >&2
        return 1
    fi
    install -d -m 0755 "$TLS_DIR"
    if ! tls_certs; then
        echo "services: openssl could not make the certificates in $TLS_CERTS" >&2
        return 1
    fi
    if [ ! -s "$TLS_DATA/PG_VERSION" ]; then
        rm -rf "$TLS_DATA"
        install -d -m 0700 -o postgres -g postgres "$TLS_DATA"
        if ! as_postgres "$bin/initdb" -D "$TLS_DATA" -U postgres -A trust -E UTF8 --no-locale >/dev/null; then
            echo "services: initdb failed for $TLS_DATA" >&2
            return 1
        fi
        cat >>"$TLS_DATA/postgresql.conf" <<CONF

# sonde's tests: PostgreSQL over TLS only (scripts/services.sh)
listen_addresses = '127.0.0.1'
port = $TLS_PORT
unix_socket_directories = '$TLS_DATA'
ssl = on
ssl_cert_file = '$TLS_CERTS/server.pem'
ssl_key_file = '$TLS_CERTS/server.key'
ssl_ca_file = ''
CONF
        # TLS from 127.0.0.1 only (plain TCP has no line, so it is
        # refused), and the local socket this script sets up through.
        printf '%s\n' 'local all all trust' 'hostssl all all 127.0.0.1/32 trust' \
            >"$TLS_DATA/pg_hba.conf"
        chown postgres:postgres "$TLS_DATA/postgresql.conf" "$TLS_DATA/pg_hba.conf"
    fi
    # pg_ctl's own wait is bounded (-t); a stale postmaster.pid of a
    # stopped server is the server's to see through.
    as_postgres "$bin/pg_ctl" -D "$TLS_DATA" -l "$TLS_DATA/server.log" -w -t 30 start >/dev/null ||
        true
    for _ in $(seq 1 30); do
        tls_up && break
        sleep 0.5
    done
    if ! tls_up; then
        echo "services: PostgreSQL over TLS did not start on 127.0.0.1:$TLS_PORT; see $TLS_DATA/server.log" >&2
        return 1
    fi
    local psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$TLS_DATA" -p "$TLS_PORT" -U postgres)
    [ "$(as_postgres "${psql[@]}" -d postgres -Atc "SELECT 1 FROM pg_roles WHERE rolname = 'root'")" = 1 ] ||
        as_postgres "${psql[@]}" -d postgres -c "CREATE ROLE root SUPERUSER LOGIN"
    [ "$(as_postgres "${psql[@]}" -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'test'")" = 1 ] ||
        as_postgres "${psql[@]}" -d postgres -c "CREATE DATABASE test OWNER root"
}

# A primary on 5434 and its streaming replica (hot standby) on 5435,
# clusters of our own in /var/tmp/sonde-pg-replica (trust, role `root`,
# database `test`): the API's reads from a replica (`[http]
# archive_read`) are tested against them.
REP_DIR=/var/tmp/sonde-pg-replica
REP_PRIMARY=$REP_DIR/primary
REP_STANDBY=$REP_DIR/standby
REP_PRIMARY_PORT=5434
REP_STANDBY_PORT=5435

rep_up() { pg_isready -q -h 127.0.0.1 -p "$1" 2>/dev/null; }

# Starts the cluster in $1 and waits (bounded) for port $2.
rep_start() {
    as_postgres "$bin/pg_ctl" -D "$1" -l "$1/server.log" -w -t 30 start >/dev/null || true
    for _ in $(seq 1 30); do
        rep_up "$2" && return 0
        sleep 0.5
    done
    echo "services: PostgreSQL did not start on 127.0.0.1:$2; see $1/server.log" >&2
    return 1
}

pg_replica() {
    rep_up "$REP_PRIMARY_PORT" && rep_up "$REP_STANDBY_PORT" && return 0
    local bin
    bin=$(pg_bindir) || bin=
    if [ -z "$bin" ] || ! id postgres >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
        echo "services: no primary and replica on 127.0.0.1:$REP_PRIMARY_PORT/$REP_STANDBY_PORT" >&2
        echo "          (needs root, the postgres user and the server binaries)" >&2
        return 1
    fi
    install -d -m 0755 -o postgres -g postgres "$REP_DIR"
    if [ ! -s "$REP_PRIMARY/PG_VERSION" ]; then
        rm -rf "$REP_PRIMARY" "$REP_STANDBY"
        install -d -m 0700 -o postgres -g postgres "$REP_PRIMARY"
        as_postgres "$bin/initdb" -D "$REP_PRIMARY" -U postgres -A trust -E UTF8 --no-locale >/dev/null ||
            { echo "services: initdb failed for $REP_PRIMARY" >&2; return 1; }
        cat >>"$REP_PRIMARY/postgresql.conf" <<CONF

# sonde's tests: the primary of a streaming replica (scripts/services.sh)
listen_addresses = '127.0.0.1'
port = $REP_PRIMARY_PORT
unix_socket_directories = '$REP_DIR'
wal_level = replica
max_wal_senders = 4
CONF
    fi
    rep_up "$REP_PRIMARY_PORT" || rep_start "$REP_PRIMARY" "$REP_PRIMARY_PORT" || return 1
    local psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$REP_DIR" -p "$REP_PRIMARY_PORT" -U postgres)
    [ "$(as_postgres "${psql[@]}" -d postgres -Atc "SELECT 1 FROM pg_roles WHERE rolname = 'root'")" = 1 ] ||
        as_postgres "${psql[@]}" -d postgres -c "CREATE ROLE root SUPERUSER LOGIN" || return 1
    [ "$(as_postgres "${psql[@]}" -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'test'")" = 1 ] ||
        as_postgres "${psql[@]}" -d postgres -c "CREATE DATABASE test OWNER root" || return 1
    if [ ! -s "$REP_STANDBY/PG_VERSION" ]; then
        rm -rf "$REP_STANDBY"
        install -d -m 0700 -o postgres -g postgres "$REP_STANDBY"
        # A copy of the primary that follows it (-R: standby.signal and
        # its primary_conninfo), on a port and socket of its own, through a
        # replication slot (-C -S: the primary keeps the WAL a stopped
        # standby has not replayed). A slot left by a standby removed
        # before goes first.
        as_postgres "${psql[@]}" -d postgres -Atc "SELECT pg_drop_replication_slot(slot_name) \
            FROM pg_replication_slots WHERE slot_name = 'sonde_standby'" >/dev/null
        as_postgres "$bin/pg_basebackup" -h 127.0.0.1 -p "$REP_PRIMARY_PORT" -U postgres \
            -D "$REP_STANDBY" -R -X stream -C -S sonde_standby >/dev/null ||
            { echo "services: pg_basebackup failed for $REP_STANDBY" >&2; return 1; }
        printf '%s\n' "port = $REP_STANDBY_PORT" "unix_socket_directories = '$REP_DIR'" \
            "hot_standby = on" >>"$REP_STANDBY/postgresql.auto.conf"
        chown postgres:postgres "$REP_STANDBY/postgresql.auto.conf"
    fi
    rep_up "$REP_STANDBY_PORT" || rep_start "$REP_STANDBY" "$REP_STANDBY_PORT"
}

pg_plain || failed=1
pg_tls || failed=1
pg_replica || failed=1
exit "$failed"
