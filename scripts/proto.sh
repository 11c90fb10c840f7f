#!/usr/bin/env bash
# `npm run proto`: regenerates the TypeScript of the gRPC contracts in libs/proto/proto/ (the package
# @noded/proto) with protoc and ts-proto, into libs/proto/src/gen/ (committed, never edited by hand), and writes gen/SHA256SUMS: the
# sha256 of every .proto file, of this script (it holds the ts-proto options) and of every generated
# file. test/cluster/proto-gen.test.ts checks those sums, so a .proto changed without regenerating,
# or a generated file edited by hand, fails the tests without needing protoc.
#
# Before generating, scripts/proto-check.mjs lints the .proto files and checks them against
# libs/proto/baseline.json (docs/cluster.md "Versioning rule"): a lint finding or a breaking change
# stops here, before anything is written; otherwise the baseline is rewritten to record what was
# added (commit it with the change; `npm run lint` fails while it lags the files).
#
# Needs protoc 3.x with the well-known types (Debian: apt-get install protobuf-compiler
# libprotobuf-dev) and ts-proto from the dev dependencies (npm ci).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=libs/proto/src/gen
PROTO=libs/proto/proto
# The .proto files generated, relative to $PROTO. google/protobuf/{timestamp,duration}.proto come
# with protoc's include directory and are generated alongside as imports.
PROTOS=(noded/abci/v1/abci.proto noded/stream/v1/committed.proto noded/state/v1/state.proto noded/mempool/v1/mempool.proto noded/dev/v1/dev.proto noded/p2p/v1/gateway.proto grpc/health/v1/health.proto)
# ts-proto options (https://github.com/stephenh/ts-proto#supported-options):
# grpc-js service definitions and clients; int64/uint64 as bigint; message fields optional
# (absent = undefined, so presence is checkable); Timestamp kept as {seconds, nanos} (a Date would
# drop nanoseconds); bytes as Uint8Array; no JSON methods (the wire is binary only).
OPTS=outputServices=grpc-js,esModuleInterop=true,importSuffix=.js,forceLong=bigint,useOptionals=messages,useDate=false,outputJsonMethods=false

command -v protoc >/dev/null 2>&1 || {
  echo "proto: protoc not found; install it: apt-get install protobuf-compiler libprotobuf-dev" >&2
  exit 1
}
INCLUDE=""
for d in /usr/include /usr/local/include; do
  [ -f "$d/google/protobuf/timestamp.proto" ] && INCLUDE=$d && break
done
[ -n "$INCLUDE" ] || {
  echo "proto: google/protobuf/timestamp.proto not found; install it: apt-get install libprotobuf-dev" >&2
  exit 1
}
PLUGIN=node_modules/.bin/protoc-gen-ts_proto
[ -x "$PLUGIN" ] || { echo "proto: $PLUGIN missing; run npm ci" >&2; exit 1; }

node scripts/proto-check.mjs --write-baseline

rm -rf "$OUT"
mkdir -p "$OUT"
protoc --plugin="protoc-gen-ts_proto=$PLUGIN" -I "$PROTO" -I "$INCLUDE" \
  --ts_proto_out="$OUT" --ts_proto_opt="$OPTS" "${PROTOS[@]/#/$PROTO/}"

# Sorted, paths relative to the repository root, in `sha256sum -c` format.
{
  find "$PROTO" -name '*.proto' -type f
  echo scripts/proto.sh
  find "$OUT" -name '*.ts' -type f
} | LC_ALL=C sort | xargs sha256sum >"$OUT/SHA256SUMS.tmp"
mv "$OUT/SHA256SUMS.tmp" "$OUT/SHA256SUMS"
echo "proto: generated $(find "$OUT" -name '*.ts' | wc -l) files into $OUT"
