#!/bin/sh
# Prepares the node home in the volume at $NODED_HOME before the services start (an initContainer; the
# compose file's init service does the same). Never overwrites chain data or the validator's signing state.
#   1. First start: `noded init` writes the home for $NODED_CHAIN_ID (the shipped genesis). The keys it
#      generates are replaced below when the pod mounts the operator's Secret.
#   2. Every start: config.toml and app.toml come from the ConfigMap, so a `kubectl apply` of new
#      settings takes effect on the next restart.
#   3. Keys: priv_validator_key.json and node_key.json come from the Secret mounted at $NODED_KEYS_DIR
#      (only the validator mounts one), copied with mode 0600.
set -eu
: "${NODED_HOME:?}" "${NODED_CHAIN_ID:?}"
# Refuse before touching the home when the Secret is incomplete.
if [ -n "${NODED_KEYS_DIR:-}" ]; then
  for key in priv_validator_key.json node_key.json; do
    if [ ! -s "$NODED_KEYS_DIR/$key" ]; then
      echo "init-home: $NODED_KEYS_DIR/$key is missing or empty; create the Secret noded-validator-keys (docs/deploy.md, Keys)" >&2
      exit 1
    fi
  done
fi
if [ ! -f "$NODED_HOME/config/genesis.json" ]; then
  noded init full --chain-id "$NODED_CHAIN_ID" --moniker "${NODED_MONIKER:-$(hostname)}" --home "$NODED_HOME"
fi
if [ -n "${NODED_CONFIG_DIR:-}" ]; then
  cp "$NODED_CONFIG_DIR/config.toml" "$NODED_CONFIG_DIR/app.toml" "$NODED_HOME/config/"
fi
if [ -n "${NODED_KEYS_DIR:-}" ]; then
  install -m 0600 "$NODED_KEYS_DIR/priv_validator_key.json" "$NODED_KEYS_DIR/node_key.json" "$NODED_HOME/config/"
fi
noded config validate --home "$NODED_HOME"
