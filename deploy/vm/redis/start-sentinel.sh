#!/bin/sh
# One Sentinel of the queue's Redis group (deploy/vm/compose/redis.yml, docker-compose.sentinel.yml).
# Like start-redis.sh it writes its configuration file (0600) on the first start only: a Sentinel
# rewrites it with what it learns (the current master, the other Sentinels, the epoch), and a
# restarted Sentinel must remember that.
#
# Settings (environment):
#   REDIS_SENTINEL_AUTH_PASSWORD  the password of the servers' `sentinela` user (start-redis.sh),
#                             which the Sentinels log in as (sentinel auth-user/auth-pass)
#   REDIS_SENTINEL_PASSWORD   this Sentinel's own password (requirepass), also the one it uses
#                             with the other Sentinels (sentinel sentinel-pass): the same on all
#   REDIS_MASTER_HOST, REDIS_MASTER_PORT (6379)  the first master
#   REDIS_SENTINEL_NAME (censo)  the master group name, as the services' REDIS_SENTINEL_NAME
#   REDIS_ANNOUNCE_IP         this Sentinel's address for the others (host address or name)
#   SENTINEL_QUORUM (2), SENTINEL_DOWN_AFTER_MS (5000; README: never below 2000),
#   SENTINEL_FAILOVER_TIMEOUT_MS (30000: a failed election is tried again after twice this),
#   SENTINEL_PORT (26379), REDIS_BIND ("* -::*"), REDIS_DATA_DIR (/data)
#   REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE, REDIS_TLS_CA_CERT_FILE  as start-redis.sh: required,
#                             TLS only, to clients, to the servers and to the other Sentinels
#   REDIS_PLAIN_TCP           yes: plain TCP instead (the root compose files, one host only)
set -eu

: "${REDIS_SENTINEL_AUTH_PASSWORD:?REDIS_SENTINEL_AUTH_PASSWORD is required (the servers' sentinela user)}"
: "${REDIS_SENTINEL_PASSWORD:?REDIS_SENTINEL_PASSWORD is required}"
: "${REDIS_MASTER_HOST:?REDIS_MASTER_HOST is required (the first master)}"
for value in "$REDIS_SENTINEL_AUTH_PASSWORD" "$REDIS_SENTINEL_PASSWORD"; do
  case "$value" in
    *[!A-Za-z0-9._~+/=-]*)
      echo "start-sentinel: the passwords may hold only letters, digits and ._~+/=- (e.g. openssl rand -hex 32)" >&2
      exit 1
      ;;
  esac
done
name="${REDIS_SENTINEL_NAME:-censo}"
port="${SENTINEL_PORT:-26379}"
bind="${REDIS_BIND:-* -::*}"
dir="${REDIS_DATA_DIR:-/data}"
conf="$dir/sentinel.conf"

# The listening lines (TLS alone, or plain TCP when asked), shared with the other script of this
# folder; read first, so a missing certificate stops here, before any file is written.
. "$(dirname "$0")/listen.sh"
listening="$(listen "$port")"

umask 077
mkdir -p "$dir"
if [ ! -f "$conf" ]; then
  {
    echo "$listening"
    echo "bind $bind"
    echo "dir $dir"
    echo "requirepass $REDIS_SENTINEL_PASSWORD"
    echo "sentinel sentinel-pass $REDIS_SENTINEL_PASSWORD"
    # Names such as redis-1.censo.interno are resolved, and resolved again after a restart.
    echo "sentinel resolve-hostnames yes"
    if [ -n "${REDIS_ANNOUNCE_IP:-}" ]; then
      echo "sentinel announce-ip $REDIS_ANNOUNCE_IP"
      # An IPv6 address holds ':', an IPv4 one only digits and dots; anything else is a name.
      case "$REDIS_ANNOUNCE_IP" in
        *:*) ;;
        *[!0-9.]*) echo "sentinel announce-hostnames yes" ;;
      esac
    fi
    echo "sentinel monitor $name $REDIS_MASTER_HOST ${REDIS_MASTER_PORT:-6379} ${SENTINEL_QUORUM:-2}"
    # The servers' sentinela user: what a Sentinel needs there and nothing else (start-redis.sh).
    echo "sentinel auth-user $name sentinela"
    echo "sentinel auth-pass $name $REDIS_SENTINEL_AUTH_PASSWORD"
    echo "sentinel down-after-milliseconds $name ${SENTINEL_DOWN_AFTER_MS:-5000}"
    echo "sentinel failover-timeout $name ${SENTINEL_FAILOVER_TIMEOUT_MS:-30000}"
    echo "sentinel parallel-syncs $name 1"
  } > "$conf.tmp"
  mv "$conf.tmp" "$conf"
fi

if command -v docker-entrypoint.sh >/dev/null 2>&1; then
  exec docker-entrypoint.sh redis-server "$conf" --sentinel
fi
exec redis-server "$conf" --sentinel
