# Thin wrappers over npm scripts; see README.md.
HOME_DIR ?= $(or $(NODED_HOME),$(HOME)/.noded)

.PHONY: setup build test lint typecheck local sim bench clean

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

# Installs, builds, initialises a chain-local home if there is none, and starts the node.
local: setup build
	@test -f "$(HOME_DIR)/config/genesis.json" || node bin/noded.js init full --chain-id chain-local --home "$(HOME_DIR)"
	node bin/noded.js start --home "$(HOME_DIR)"

sim: build
	npm run sim -- --seeds 300

bench:
	npm run bench

clean:
	rm -rf dist
