# Sourced by start-redis.sh and start-sentinel.sh (mounted beside them): the lines of a Redis or
# Sentinel configuration that say where it listens.
# TLS alone on the port (the default: passwords, sessions and task records must not cross the
# network in clear), or plain TCP only when REDIS_PLAIN_TCP=yes says so: the single-host compose
# files at the repository's root, where Redis never leaves Docker's own network. The password
# still authenticates clients; TLS encrypts and proves the server's name (tls-auth-clients no).
listen() {
  if [ -n "${REDIS_TLS_CERT_FILE:-}" ]; then
    : "${REDIS_TLS_KEY_FILE:?REDIS_TLS_KEY_FILE is required with REDIS_TLS_CERT_FILE}"
    : "${REDIS_TLS_CA_CERT_FILE:?REDIS_TLS_CA_CERT_FILE is required with REDIS_TLS_CERT_FILE}"
    echo "port 0"
    echo "tls-port $1"
    echo "tls-cert-file $REDIS_TLS_CERT_FILE"
    echo "tls-key-file $REDIS_TLS_KEY_FILE"
    echo "tls-ca-cert-file $REDIS_TLS_CA_CERT_FILE"
    echo "tls-auth-clients no"
    echo "tls-replication yes"
  elif [ "${REDIS_PLAIN_TCP:-}" = "yes" ]; then
    echo "port $1"
  else
    echo "listen: TLS is required: set REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE and REDIS_TLS_CA_CERT_FILE (docs/operacao.md, \"TLS dentro da rede\"), or REDIS_PLAIN_TCP=yes for a single host where Redis never crosses the network" >&2
    return 1
  fi
}
