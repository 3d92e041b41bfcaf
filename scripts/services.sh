#!/usr/bin/env bash
# Makes sure the services sonde's tests talk to are up: PostgreSQL on
# 127.0.0.1:5432 (trust auth, database `test`) for the archive's tests.
# Starts a stopped local cluster; says what is missing otherwise.
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

if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    exit 0
fi
if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    for version in /etc/postgresql/*; do
        pg_ctlcluster --skip-systemctl-redirect "$(basename "$version")" main start || true
    done
    for _ in $(seq 1 30); do
        pg_isready -q -h 127.0.0.1 -p 5432 && exit 0
        sleep 1
    done
fi
echo "services: PostgreSQL is not reachable on 127.0.0.1:5432 (the archive's tests need it," >&2
echo "          trust auth and a database 'test')" >&2
exit 1
