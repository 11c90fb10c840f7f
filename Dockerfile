# syntax=docker/dockerfile:1
# One image for every way noded runs: `noded start` (all-in-one), `noded service <name>` (the cluster,
# issue 22), `noded init` / `noded testnet` (one-shot). docs/deploy.md walks through compose, kustomize
# and Helm. Keys and homes live in the volume at /data, never in the image.
#
#   docker build -t noded:0.1.0 .
#   docker run --rm -v noded-home:/data noded:0.1.0 init full --chain-id chain-local
#   docker run -d -v noded-home:/data -p 26656:26656 -p 8545:8545 noded:0.1.0 start

# ---- build: dev dependencies, TypeScript compile -------------------------------------------------
FROM node:22.20.0-bookworm-slim AS build
WORKDIR /src
# g++ for libs/native's add-on (scripts/build-native.mjs; Node's headers are in the image): only this
# stage compiles, the stages below copy the compiled add-on with dist/.
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ \
    && rm -rf /var/lib/apt/lists/*
# The lock file alone decides what is installed; the sources come after so a code change reuses this layer.
COPY package.json package-lock.json ./
# The workspaces: each package.json (npm ci installs a workspace tree from them).
COPY libs/abci-grpc/package.json libs/abci-grpc/package.json
COPY libs/config/package.json libs/config/package.json
COPY libs/consensus/package.json libs/consensus/package.json
COPY libs/crypto/package.json libs/crypto/package.json
COPY libs/execution/package.json libs/execution/package.json
COPY libs/native/package.json libs/native/package.json
COPY libs/p2p/package.json libs/p2p/package.json
COPY libs/proto/package.json libs/proto/package.json
COPY libs/rpc/package.json libs/rpc/package.json
COPY libs/storage/package.json libs/storage/package.json
COPY libs/stream/package.json libs/stream/package.json
COPY libs/telemetry/package.json libs/telemetry/package.json
COPY libs/types/package.json libs/types/package.json
COPY services/consensus/package.json services/consensus/package.json
COPY services/executor/package.json services/executor/package.json
COPY services/metrics/package.json services/metrics/package.json
COPY services/noded/package.json services/noded/package.json
COPY services/p2p-gateway/package.json services/p2p-gateway/package.json
COPY services/rpc-edge/package.json services/rpc-edge/package.json
COPY services/shared/package.json services/shared/package.json
COPY services/state-store/package.json services/state-store/package.json
COPY scripts/patch-deps.mjs scripts/patch-deps.mjs
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY bin bin
COPY libs libs
COPY services services
COPY test test
COPY bench bench
COPY scripts/dist-packages.mjs scripts/dist-packages.mjs
COPY scripts/build-native.mjs scripts/build-native.mjs
RUN npm run build

# ---- service: one cluster service alone, with only its own production dependencies -----------------
# docs/deploy.md "Per-service images". No CLI in it: the entry point is the service's own main.
#   docker build --target service --build-arg SERVICE=rpc-edge -t noded-rpc-edge:0.1.0 .
#   docker run -d -v noded-home:/data:ro noded-rpc-edge:0.1.0 --log-file -
FROM node:22.20.0-bookworm-slim AS service
ARG SERVICE
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="noded-${SERVICE}" \
      org.opencontainers.image.description="The ${SERVICE} service of the noded cluster" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="UNLICENSED" \
      org.opencontainers.image.documentation="docs/deploy.md"
# As the runtime stage below (the malloc settings: see there).
ENV NODE_ENV=production \
    NODED_HOME=/data \
    NODED_HEALTH_URL=http://127.0.0.1:26660/healthz \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=131072
WORKDIR /opt/noded
COPY package.json package-lock.json ./
# The workspaces: each package.json (npm ci installs a workspace tree from them).
COPY libs/abci-grpc/package.json libs/abci-grpc/package.json
COPY libs/config/package.json libs/config/package.json
COPY libs/consensus/package.json libs/consensus/package.json
COPY libs/crypto/package.json libs/crypto/package.json
COPY libs/execution/package.json libs/execution/package.json
COPY libs/native/package.json libs/native/package.json
COPY libs/p2p/package.json libs/p2p/package.json
COPY libs/proto/package.json libs/proto/package.json
COPY libs/rpc/package.json libs/rpc/package.json
COPY libs/storage/package.json libs/storage/package.json
COPY libs/stream/package.json libs/stream/package.json
COPY libs/telemetry/package.json libs/telemetry/package.json
COPY libs/types/package.json libs/types/package.json
COPY services/consensus/package.json services/consensus/package.json
COPY services/executor/package.json services/executor/package.json
COPY services/metrics/package.json services/metrics/package.json
COPY services/noded/package.json services/noded/package.json
COPY services/p2p-gateway/package.json services/p2p-gateway/package.json
COPY services/rpc-edge/package.json services/rpc-edge/package.json
COPY services/shared/package.json services/shared/package.json
COPY services/state-store/package.json services/state-store/package.json
COPY scripts/patch-deps.mjs scripts/patch-deps.mjs
COPY scripts/service-dist.mjs scripts/service-dist.mjs
# Only the service's workspace and what it needs at run time (each package.json lists its runtime
# imports; types come from tsconfig paths at build time). npm ci refuses a name that is no workspace.
RUN test -n "${SERVICE}" \
    && npm ci --omit=dev --workspace "@noded/service-${SERVICE}" --no-audit --no-fund \
    && npm cache clean --force
COPY libs/config/networks libs/config/networks
# The compiled packages npm linked above, from the build stage's dist/ (a mount: nothing else of it
# lands in a layer); then the entry point is loaded once, so a package missing from the closure, or a
# native module that does not load, fails the build and not the first start.
RUN --mount=type=bind,from=build,source=/src/dist,target=/mnt/dist \
    node scripts/service-dist.mjs /mnt/dist dist \
    && node "dist/services/${SERVICE}/src/main.js" --version
RUN chmod 0755 "dist/services/${SERVICE}/src/main.js" \
    && ln -s "/opt/noded/dist/services/${SERVICE}/src/main.js" /usr/local/bin/noded-service
# /nats-auth: as in the runtime stage (compose mounts the NATS logins there).
RUN mkdir -p /data /nats-auth \
    && chown node:node /data /nats-auth
USER node:node
VOLUME ["/data"]
EXPOSE 26656 26657 1317 8545 8546 26660 26670 26671 26672 26680 26681 26682 26683 26684
# A service's health is on its own metrics port: compose, Kubernetes and Helm set NODED_HEALTH_URL.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=4 \
  CMD ["node", "-e", "fetch(process.env.NODED_HEALTH_URL,{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["noded-service"]

# ---- runtime: production dependencies only, non-root -----------------------------------------------
FROM node:22.20.0-bookworm-slim AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="noded" \
      org.opencontainers.image.description="Node of a Bitcoin-first, EVM-compatible chain with BFT finality" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="UNLICENSED" \
      org.opencontainers.image.documentation="docs/deploy.md"
# MALLOC_ARENA_MAX=2: glibc keeps freed native memory (RocksDB, Buffers) in up to 8 arenas per core;
# two halved the RSS growth of a 30-minute soak. MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_
# fixed at 128 KiB: blocks over it (RocksDB's memtable blocks, large Buffers) stay mappings of their
# own, given back when freed, instead of glibc raising the threshold and keeping them in its heaps
# (docs/reliability.md, Bounded memory; docs/configuration.md, Process environment).
ENV NODE_ENV=production \
    NODED_HOME=/data \
    NODED_HEALTH_URL=http://127.0.0.1:26660/healthz \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=131072
WORKDIR /opt/noded
COPY package.json package-lock.json ./
# The workspaces: each package.json (npm ci installs a workspace tree from them).
COPY libs/abci-grpc/package.json libs/abci-grpc/package.json
COPY libs/config/package.json libs/config/package.json
COPY libs/consensus/package.json libs/consensus/package.json
COPY libs/crypto/package.json libs/crypto/package.json
COPY libs/execution/package.json libs/execution/package.json
COPY libs/native/package.json libs/native/package.json
COPY libs/p2p/package.json libs/p2p/package.json
COPY libs/proto/package.json libs/proto/package.json
COPY libs/rpc/package.json libs/rpc/package.json
COPY libs/storage/package.json libs/storage/package.json
COPY libs/stream/package.json libs/stream/package.json
COPY libs/telemetry/package.json libs/telemetry/package.json
COPY libs/types/package.json libs/types/package.json
COPY services/consensus/package.json services/consensus/package.json
COPY services/executor/package.json services/executor/package.json
COPY services/metrics/package.json services/metrics/package.json
COPY services/noded/package.json services/noded/package.json
COPY services/p2p-gateway/package.json services/p2p-gateway/package.json
COPY services/rpc-edge/package.json services/rpc-edge/package.json
COPY services/shared/package.json services/shared/package.json
COPY services/state-store/package.json services/state-store/package.json
COPY scripts/patch-deps.mjs scripts/patch-deps.mjs
# secp256k1, keccak and @nxtedition/rocksdb ship prebuilt glibc binaries, so no compiler is needed;
# the second command fails the build here, not at the first start, if one of them does not load.
RUN npm ci --omit=dev --no-audit --no-fund \
    && node -e "require('@nxtedition/rocksdb'); require('secp256k1'); require('keccak')" \
    && npm cache clean --force
COPY bin bin
COPY libs/config/networks libs/config/networks
COPY --from=build /src/dist/libs dist/libs
COPY --from=build /src/dist/services dist/services
COPY --from=build /src/dist/node_modules dist/node_modules
# /nats-auth: where compose mounts the volume its init writes the NATS logins into; a new named volume
# takes the ownership of the image's directory, so the node user can write there.
RUN ln -s /opt/noded/bin/noded.js /usr/local/bin/noded \
    && mkdir -p /data /nats-auth \
    && chown node:node /data /nats-auth
# The node user (uid 1000) of the official image; Kubernetes runs it with runAsNonRoot.
USER node:node
VOLUME ["/data"]
# 26656 p2p, 26657 consensus RPC, 1317 REST, 8545/8546 EVM JSON-RPC, 26660 metrics and health.
EXPOSE 26656 26657 1317 8545 8546 26660
# /healthz of the metrics server; a service whose health lives elsewhere sets NODED_HEALTH_URL.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=4 \
  CMD ["node", "-e", "fetch(process.env.NODED_HEALTH_URL,{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["noded"]
CMD ["start"]
