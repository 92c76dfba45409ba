# Sourced by start-redis.sh and start-sentinel.sh (mounted beside them): the lines of a Redis or
# Sentinel configuration that say where it listens.
# Plain TCP on the port, or TLS alone on it when a certificate is given. The password still
# authenticates clients; TLS encrypts and proves the server's name (tls-auth-clients no).
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
  else
    echo "port $1"
  fi
}
