#!/usr/bin/env bash
# `make localnet`: runs every node home of a `noded testnet` directory (default ./.localnet) as a
# background process, each line of its output prefixed "[nodeN] ", until Ctrl-C (SIGINT) or SIGTERM,
# which stops them all cleanly. Usage: scripts/localnet.sh [DIR]
set -uo pipefail

dir="${1:-${LOCALNET_DIR:-./.localnet}}"
cli="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bin/noded.js"

# glibc's malloc settings of the image (Dockerfile, docs/configuration.md "Memory"), set here so that
# each node runs as one process (bin/noded.js would otherwise run it once more as a child to set them).
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-131072}"
export MALLOC_TRIM_THRESHOLD_="${MALLOC_TRIM_THRESHOLD_:-131072}"

homes=()
for i in $(seq 0 253); do
  [ -d "$dir/node$i" ] || break
  homes+=("$dir/node$i")
done
if [ "${#homes[@]}" -eq 0 ]; then
  echo "localnet: no $dir/node0; write the homes first (make localnet does: noded testnet --output $dir)" >&2
  exit 1
fi

# Each node runs as its own job, in its own process group (job control on): a Ctrl-C at the terminal
# reaches this script only, and the trap below sends each node exactly one signal. A node's second
# signal makes it exit without a clean stop, which a terminal's Ctrl-C plus ours would cause.
set -m

# Prefixes each line; it ignores INT and TERM so that a stopping node's last lines still get through.
prefix() {
  trap '' INT TERM
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    printf '[%s] %s\n' "$1" "$line"
  done
}

groups=()
for home in "${homes[@]}"; do
  name="$(basename "$home")"
  node "$cli" start --home "$home" </dev/null 2>&1 | prefix "$name" &
  groups+=("$(ps -o pgid= -p "$!" | tr -d ' ')")
done

stopping=0
stop_all() {
  if [ "$stopping" -eq 1 ]; then
    echo "[localnet] stopping again: the nodes exit without waiting" >&2
  else
    echo "[localnet] stopping ${#groups[@]} nodes" >&2
  fi
  stopping=1
  for g in "${groups[@]}"; do
    [ -n "$g" ] && kill -TERM -- "-$g" 2>/dev/null
  done
}
trap stop_all INT TERM

echo "[localnet] ${#homes[@]} nodes of $dir running; Ctrl-C stops them all" >&2
for home in "${homes[@]}"; do
  rpc="$(sed -n 's/^node *= *"tcp:\/\/\(.*\)"/\1/p' "$home/config/client.toml" 2>/dev/null)"
  echo "[localnet]   $(basename "$home"): consensus RPC http://${rpc:-?}  EVM JSON-RPC http://${rpc%:*}:8545" >&2
done

# `wait` returns early when a trapped signal arrives; wait again until every node has exited.
while [ -n "$(jobs -pr)" ]; do
  wait
done
if [ "$stopping" -eq 0 ]; then
  echo "[localnet] every node exited on its own (see the lines above)" >&2
  exit 1
fi
echo "[localnet] all nodes stopped" >&2
