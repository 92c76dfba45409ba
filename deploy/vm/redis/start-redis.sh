#!/bin/sh
# One Redis server of the queue's Sentinel group (deploy/vm/compose/redis.yml, and the compose
# files at the repository's root). The password never goes on a command line, where any user of
# the host could read it in `ps`: the configuration file is written here, 0600, on the first start.
# Later starts keep it, because Redis and the Sentinels rewrite it after a failover (who follows
# whom); to change a setting, remove the file and start again.
#
# Settings (environment):
#   REDIS_PASSWORD       required; clients, replicas and Sentinels authenticate with it
#   REDIS_REPLICA_OF     "<host> <port>" of the server to follow at the first start; empty: start as
#                        the master (the first host of the group)
#   REDIS_ANNOUNCE_IP    the address the others must use for this server (its host's address when
#                        containers run with network_mode: host); empty: the one they see
#   REDIS_MIN_REPLICAS_TO_WRITE  1 (default): a master cut off from every replica stops taking
#                        writes a failover would lose; 0 for a lone server without Sentinel
#   REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE, REDIS_TLS_CA_CERT_FILE  set: TLS only, on REDIS_PORT
#                        (clients use rediss://), replication over TLS too; certificates from the
#                        secretariat's internal CA, naming the address the server announces
#   REDIS_PORT (6379), REDIS_BIND ("* -::*"), REDIS_DATA_DIR (/data)
set -eu

: "${REDIS_PASSWORD:?REDIS_PASSWORD is required}"
case "$REDIS_PASSWORD" in
  *[!A-Za-z0-9._~+/=-]*)
    echo "start-redis: REDIS_PASSWORD may hold only letters, digits and ._~+/=- (e.g. openssl rand -hex 32)" >&2
    exit 1
    ;;
esac
port="${REDIS_PORT:-6379}"
bind="${REDIS_BIND:-* -::*}"
dir="${REDIS_DATA_DIR:-/data}"
min_replicas="${REDIS_MIN_REPLICAS_TO_WRITE:-1}"
conf="$dir/redis.conf"

# The listening lines (plain TCP, or TLS alone), shared with the other script of this folder.
. "$(dirname "$0")/listen.sh"

umask 077
mkdir -p "$dir"
if [ ! -f "$conf" ]; then
  {
    listen "$port"
    echo "bind $bind"
    echo "dir $dir"
    echo "requirepass $REDIS_PASSWORD"
    # Any replica may be promoted, and then the old master follows it: every server needs both.
    echo "masterauth $REDIS_PASSWORD"
    # A job queue must never lose keys silently (BullMQ's production guide).
    echo "maxmemory-policy noeviction"
    echo "appendonly yes"
    echo "appendfsync everysec"
    echo "min-replicas-to-write $min_replicas"
    echo "min-replicas-max-lag 10"
    if [ -n "${REDIS_ANNOUNCE_IP:-}" ]; then echo "replica-announce-ip $REDIS_ANNOUNCE_IP"; fi
    if [ -n "${REDIS_REPLICA_OF:-}" ]; then echo "replicaof $REDIS_REPLICA_OF"; fi
  } > "$conf.tmp"
  mv "$conf.tmp" "$conf"
fi

# Inside the redis image its entrypoint hands the data folder to the `redis` user and drops root;
# on a host without the image the script runs as whoever started it.
if command -v docker-entrypoint.sh >/dev/null 2>&1; then
  exec docker-entrypoint.sh redis-server "$conf"
fi
exec redis-server "$conf"
