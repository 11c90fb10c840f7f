#!/usr/bin/env bash
# `make cluster`: the chain-local cluster on one machine without Docker (docs/cluster.md):
# nats-server with JetStream, `noded service executor`, `p2p-gateway`, `consensus`, `state-store`, `rpc-edge` and
# `metrics`, each a
# background job whose lines are prefixed "[name] ". A service that exits on its own is restarted
# after a second (as a container runtime would); Ctrl-C (SIGINT) or SIGTERM stops them all.
# nats-server requires a login: `noded nats-auth` writes one user per service with its subject
# permissions into HOME/data/nats/auth.conf and each password into HOME/data/nats/<service>.password
# (kept across runs), and each service gets its own NODED_NATS_USER and NODED_NATS_PASSWORD_FILE.
# Usage: scripts/cluster.sh HOME  (initialise HOME first: noded init full --chain-id chain-local)
# Environment: NATS_PORT (4222), NATS_SERVER (nats-server), EXECUTOR_METRICS, CONSENSUS_METRICS,
# STATE_STORE_METRICS, RPC_EDGE_METRICS, P2P_GATEWAY_METRICS (each service's own metrics endpoint,
# 127.0.0.1:26680..26684, gathered by the metrics service on [instrumentation] prometheus_listen_addr),
# NODED_P2P_GATEWAY_ADDRESS (the gateway's relay for consensus, 127.0.0.1:26672), and every NODED_*
# variable of the services (NODED_EXECUTOR_GRPC_ADDRESS, NODED_RPC_LADDR, ...), passed through.
set -uo pipefail

home="${1:?usage: scripts/cluster.sh HOME}"
cli="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bin/noded.js"
nats_port="${NATS_PORT:-4222}"
# glibc's malloc settings of the image (Dockerfile, docs/configuration.md "Memory"), set here so that
# each node runs as one process (bin/noded.js would otherwise run it once more as a child to set them).
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-131072}"
export MALLOC_TRIM_THRESHOLD_="${MALLOC_TRIM_THRESHOLD_:-131072}"
nats_server="${NATS_SERVER:-nats-server}"

if [ ! -f "$home/config/genesis.json" ]; then
  echo "cluster: no $home/config/genesis.json; initialise the home first (make cluster does: noded init full --chain-id chain-local --home $home)" >&2
  exit 1
fi
if ! command -v "$nats_server" >/dev/null 2>&1; then
  echo "cluster: $nats_server not found; install it (Debian: apt-get install nats-server; scripts/test-deps.sh does)" >&2
  exit 1
fi
mkdir -p "$home/data/nats"
# One nats-server user per service, each limited to its subjects (docs/cluster.md "Security").
if ! node "$cli" nats-auth --home "$home" >/dev/null; then
  echo "cluster: noded nats-auth failed; see above" >&2
  exit 1
fi
executor_metrics="${EXECUTOR_METRICS:-127.0.0.1:26680}"
consensus_metrics="${CONSENSUS_METRICS:-127.0.0.1:26681}"
state_store_metrics="${STATE_STORE_METRICS:-127.0.0.1:26682}"
rpc_edge_metrics="${RPC_EDGE_METRICS:-127.0.0.1:26683}"
p2p_gateway_metrics="${P2P_GATEWAY_METRICS:-127.0.0.1:26684}"
# consensus reaches its peers through the gateway: set for both (docs/cluster.md "p2p-gateway").
export NODED_P2P_GATEWAY_ADDRESS="${NODED_P2P_GATEWAY_ADDRESS:-127.0.0.1:26672}"
export NODED_NATS_URL="${NODED_NATS_URL:-nats://127.0.0.1:$nats_port}"

# Each service runs as its own job, in its own process group (job control on): a Ctrl-C at the
# terminal reaches this script only, and stop_all sends each group exactly one signal.
set -m

prefix() {
  trap '' INT TERM
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    printf '[%s] %s\n' "$1" "$line"
  done
}

# Runs "$@" until it is told to stop: a process that exits on its own is restarted after a second.
supervise() {
  local name="$1"
  shift
  local stop=0
  trap 'stop=1' INT TERM
  while :; do
    "$@" </dev/null
    local code=$?
    [ "$stop" -eq 1 ] && break
    echo "exited with code $code; restarting in 1 s"
    sleep 1
    [ "$stop" -eq 1 ] && break
  done
}

groups=()
start_job() {
  local name="$1"
  shift
  supervise "$name" "$@" 2>&1 | prefix "$name" &
  groups+=("$(ps -o pgid= -p "$!" | tr -d ' ')")
}

# max_payload 64 MiB (nats-server's largest; its default is 1 MiB): a CommittedHeight carries the
# executor's write batch, about 2 KB per transfer, so a full block is several MB.
printf 'max_payload: 67108864\ninclude "auth.conf"\n' >"$home/data/nats/nats-server.conf"
start_job nats "$nats_server" -c "$home/data/nats/nats-server.conf" -js -a 127.0.0.1 -p "$nats_port" -sd "$home/data/nats"
start_job executor env NODED_NATS_USER=executor NODED_NATS_PASSWORD_FILE="$home/data/nats/executor.password" NODED_SERVICE_METRICS_ADDRESS="$executor_metrics" node "$cli" service executor --home "$home"
# the libp2p host on config.toml [p2p] laddr (26656), opened when consensus first attaches; it keeps
# its peers while consensus restarts, and consensus re-attaches when it restarts.
start_job p2p-gateway env NODED_SERVICE_METRICS_ADDRESS="$p2p_gateway_metrics" node "$cli" service p2p-gateway --home "$home"
# consensus waits for the executor ($NODED_EXECUTOR_WAIT, 60 s by default).
start_job consensus env NODED_SERVICE_METRICS_ADDRESS="$consensus_metrics" node "$cli" service consensus --home "$home"
# a read replica following the stream into <home>/data/state-store.db (NODED_STATE_STORE_DB)
start_job state-store env NODED_NATS_USER=state-store NODED_NATS_PASSWORD_FILE="$home/data/nats/state-store.password" NODED_SERVICE_METRICS_ADDRESS="$state_store_metrics" node "$cli" service state-store --home "$home"
# the Ethereum JSON-RPC on app.toml's [evm] rpc_address/ws_address (8545/8546) and the REST API on
# [api] address (1317), reading from that state-store (NODED_STATE_STORE_GRPC_ADDRESS) and, for
# REST's blocks/validator sets/node info, from consensus' CometBFT RPC (NODED_CONSENSUS_RPC_ADDRESS,
# default: config.toml [rpc] laddr), and sending transactions to the executor's mempool service.
# A second edge is one more command with other ports, e.g.
#   NODED_EVM_RPC_ADDRESS=127.0.0.1:18545 NODED_EVM_WS_ADDRESS=127.0.0.1:18546 \
#   NODED_API_ADDRESS=tcp://127.0.0.1:11317 NODED_EVM_API_ADDRESS=127.0.0.1:11317 \
#   NODED_SERVICE_METRICS_ADDRESS=127.0.0.1:26685 NODED_NATS_USER=rpc-edge \
#   NODED_NATS_PASSWORD_FILE=HOME/data/nats/rpc-edge.password noded service rpc-edge --home HOME
start_job rpc-edge env NODED_NATS_USER=rpc-edge NODED_NATS_PASSWORD_FILE="$home/data/nats/rpc-edge.password" NODED_SERVICE_METRICS_ADDRESS="$rpc_edge_metrics" node "$cli" service rpc-edge --home "$home"
# every service's metrics on [instrumentation] prometheus_listen_addr (26660) with a service label,
# and the cluster's /healthz and /readyz
start_job metrics env NODED_METRICS_TARGETS="${NODED_METRICS_TARGETS:-executor=$executor_metrics,consensus=$consensus_metrics,state-store=$state_store_metrics,rpc-edge=$rpc_edge_metrics,p2p-gateway=$p2p_gateway_metrics}" \
  node "$cli" service metrics --home "$home"

stopping=0
stop_all() {
  if [ "$stopping" -eq 1 ]; then
    echo "[cluster] stopping again: the services exit without waiting" >&2
  else
    echo "[cluster] stopping metrics, rpc-edge, state-store, consensus, p2p-gateway, executor and nats-server" >&2
  fi
  stopping=1
  # Reverse order of start: consensus stops driving the executor first; NATS last, so the
  # executor's final publish round can still reach it.
  for ((i = ${#groups[@]} - 1; i >= 0; i--)); do
    g="${groups[$i]}"
    [ -n "$g" ] && kill -TERM -- "-$g" 2>/dev/null
    [ "$i" -gt 0 ] && sleep 0.5
  done
}
trap stop_all INT TERM

echo "[cluster] nats-server (JetStream) ${NODED_NATS_URL}, executor gRPC ${NODED_EXECUTOR_GRPC_ADDRESS:-127.0.0.1:26670}, P2P ${NODED_P2P_LADDR:-(config.toml [p2p] laddr)} via the p2p-gateway (relay ${NODED_P2P_GATEWAY_ADDRESS}), consensus RPC ${NODED_RPC_LADDR:-(config.toml [rpc] laddr)}, state-store gRPC ${NODED_STATE_STORE_GRPC_ADDRESS:-127.0.0.1:26671}, Ethereum JSON-RPC ${NODED_EVM_RPC_ADDRESS:-(app.toml [evm] rpc_address)} and WebSocket ${NODED_EVM_WS_ADDRESS:-(app.toml [evm] ws_address)}, cluster metrics ${NODED_INSTRUMENTATION_PROMETHEUS_LISTEN_ADDR:-(config.toml [instrumentation] prometheus_listen_addr)}; Ctrl-C stops them all" >&2

while [ -n "$(jobs -pr)" ]; do
  wait
done
echo "[cluster] all services stopped" >&2
