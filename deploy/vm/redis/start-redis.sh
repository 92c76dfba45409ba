#!/bin/sh
# One Redis server of the queue's Sentinel group (deploy/vm/compose/redis.yml, and the compose
# files at the repository's root). The password never goes on a command line, where any user of
# the host could read it in `ps`: the configuration file is written here, 0600, on the first start.
# Later starts keep it, because Redis and the Sentinels rewrite it after a failover (who follows
# whom); to change a setting, remove the file and start again.
#
# One Redis user per role (ACL), so a leaked application password cannot empty or reconfigure
# the server, and the replicas' and Sentinels' passwords serve only their own work:
#   default      the service (API, workers; KEDA's list count): AUTH <REDIS_PASSWORD>, as the
#                service names no user. Every command BullMQ and the service use, none of the
#                @dangerous ones (FLUSHALL, FLUSHDB, KEYS, CONFIG, DEBUG, SHUTDOWN, MONITOR,
#                REPLICAOF, ACL...) but INFO, which BullMQ reads at start (version, eviction policy),
#                and CLIENT LIST, the connected workers the APIs' contract handshake counts
#   replicacao   the replicas' link to their master: PSYNC, REPLCONF, PING (Redis's ACL guide)
#   sentinela    the Sentinels on the servers: what Redis's Sentinel guide lists for them
#   censo-admin  the operator (backups, restore, password changes): every command
#
# Settings (environment):
#   REDIS_PASSWORD       required: the `default` user's (the service's) password
#   REDIS_REPLICATION_PASSWORD  the `replicacao` user's: replicas authenticate to the master with
#                        it (masteruser/masterauth); required in a group (see below)
#   REDIS_SENTINEL_AUTH_PASSWORD  the `sentinela` user's: the Sentinels' `auth-pass` on the
#                        servers; required in a group
#   REDIS_ADMIN_PASSWORD the `censo-admin` user's; required in a group; elsewhere, unset: no
#                        operator user
#   REDIS_REPLICA_OF     "<host> <port>" of the server to follow at the first start; empty: start as
#                        the master (the first host of the group)
#   REDIS_ANNOUNCE_IP    the address the others must use for this server (its host's address when
#                        containers run with network_mode: host); empty: the one they see
#   REDIS_MIN_REPLICAS_TO_WRITE  1 (default): a master cut off from every replica stops taking
#                        writes a failover would lose; 0 for a lone server without Sentinel
#   REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE, REDIS_TLS_CA_CERT_FILE  required: TLS only, on
#                        REDIS_PORT (clients use rediss://), replication over TLS too; certificates
#                        from the secretariat's internal CA, naming the address the server announces
#   REDIS_PLAIN_TCP      yes: plain TCP instead of TLS (the root compose files, one host only)
#   REDIS_PORT (6379), REDIS_BIND ("* -::*"), REDIS_DATA_DIR (/data)
set -eu

: "${REDIS_PASSWORD:?REDIS_PASSWORD is required}"
port="${REDIS_PORT:-6379}"
bind="${REDIS_BIND:-* -::*}"
dir="${REDIS_DATA_DIR:-/data}"
min_replicas="${REDIS_MIN_REPLICAS_TO_WRITE:-1}"
conf="$dir/redis.conf"

# A member of a Sentinel group (it follows a master, or refuses writes without a replica): its
# replicas and the Sentinels need their own users.
if [ -n "${REDIS_REPLICA_OF:-}" ] || [ "$min_replicas" != "0" ]; then
  : "${REDIS_REPLICATION_PASSWORD:?REDIS_REPLICATION_PASSWORD is required in a Sentinel group (the replicacao user)}"
  : "${REDIS_SENTINEL_AUTH_PASSWORD:?REDIS_SENTINEL_AUTH_PASSWORD is required in a Sentinel group (the sentinela user)}"
  : "${REDIS_ADMIN_PASSWORD:?REDIS_ADMIN_PASSWORD is required in a Sentinel group (the censo-admin user)}"
fi
for name in REDIS_PASSWORD REDIS_REPLICATION_PASSWORD REDIS_SENTINEL_AUTH_PASSWORD REDIS_ADMIN_PASSWORD; do
  eval "value=\${$name:-}"
  case "$value" in
    *[!A-Za-z0-9._~+/=-]*)
      echo "start-redis: $name may hold only letters, digits and ._~+/=- (e.g. openssl rand -hex 32)" >&2
      exit 1
      ;;
  esac
done

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
    # The service: everything but @dangerous, INFO excepted (BullMQ reads it at start), and CLIENT
    # LIST, which lists the workers connected to the queue: the APIs queue group jobs only when
    # every one of them reads them (SPEC §12); refused, an API falls back to a job per task.
    echo "user default on >$REDIS_PASSWORD ~* &* +@all -@dangerous +info +client|list"
    if [ -n "${REDIS_REPLICATION_PASSWORD:-}" ]; then
      echo "user replicacao on >$REDIS_REPLICATION_PASSWORD +psync +replconf +ping"
      # Any replica may be promoted, and then the old master follows it: every server needs both.
      echo "masteruser replicacao"
      echo "masterauth $REDIS_REPLICATION_PASSWORD"
    fi
    if [ -n "${REDIS_SENTINEL_AUTH_PASSWORD:-}" ]; then
      echo "user sentinela on >$REDIS_SENTINEL_AUTH_PASSWORD allchannels +multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish +info +client|setname +client|kill +script|kill"
    fi
    if [ -n "${REDIS_ADMIN_PASSWORD:-}" ]; then
      echo "user censo-admin on >$REDIS_ADMIN_PASSWORD ~* &* +@all"
    fi
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
