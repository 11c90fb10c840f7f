# Thin wrappers over npm scripts; see README.md.
HOME_DIR ?= $(or $(NODED_HOME),$(HOME)/.noded)
LOCALNET_DIR ?= ./.localnet

.PHONY: setup build test lint typecheck local localnet cluster sim bench clean

setup:
	npm ci

build:
	npm run build

# Everything the tests need on a fresh clone (Node and npm present; apt-get as root for the Debian
# packages), then lint, type-check and the whole suite.
test: setup
	bash scripts/test-deps.sh
	npm run lint
	npm run typecheck
	npm test

lint:
	npm run lint

typecheck:
	npm run typecheck

# glibc's malloc settings the Docker image runs with (docs/configuration.md, "Process environment"):
# read when the process starts, so they go on the command line of `noded start`.
MALLOC_ENV := MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072

# Installs, builds, initialises a chain-local home if there is none, and starts the node.
local: setup build
	@test -f "$(HOME_DIR)/config/genesis.json" || node bin/noded.js init full --chain-id chain-local --home "$(HOME_DIR)"
	$(MALLOC_ENV) node bin/noded.js start --home "$(HOME_DIR)"

# Builds, writes a 4-validator testnet (127.0.0.2-5) into LOCALNET_DIR if it has no node0, then runs
# its nodes with their output prefixed "[nodeN]"; Ctrl-C stops them all. docs/cli.md, docs/p2p.md.
localnet: build
	@test -d "$(LOCALNET_DIR)/node0" || node bin/noded.js testnet --validators 4 --output "$(LOCALNET_DIR)" --starting-ip 127.0.0.2 --overwrite
	$(MALLOC_ENV) bash scripts/localnet.sh "$(LOCALNET_DIR)"

# The chain-local cluster without Docker (docs/cluster.md): initialises HOME_DIR like `local`, then
# runs nats-server (JetStream, store in HOME_DIR/data/nats), the executor, p2p-gateway (P2P on :26656),
# consensus, state-store, rpc-edge and metrics services (the cluster's metrics on :26660) with their
# output prefixed "[name]";
# a service that exits is restarted; Ctrl-C stops them all.
cluster: setup build
	@test -f "$(HOME_DIR)/config/genesis.json" || node bin/noded.js init full --chain-id chain-local --home "$(HOME_DIR)"
	bash scripts/cluster.sh "$(HOME_DIR)"

sim: build
	npm run sim -- --seeds 300

bench:
	npm run bench

clean:
	rm -rf dist
