#!/usr/bin/env bash
# Installs Foundry's cast and anvil from npm (into .tmp/cast, .tmp/anvil) and the Debian packages some tests run, when
# missing: prometheus (promtool and the server, for test/telemetry/metrics.test.ts), openssl (certificates for the TLS tests), nats-server (the cluster
# tests), docker-compose (v1: `docker-compose config` of docker-compose.yml) and haproxy (`haproxy -c` of
# the compose proxy's config) for test/deploy. Installs only as root with apt-get; otherwise names what to
# install. Exits non-zero when a tool is still missing,
# so that no test can fail late or be skipped for want of it.
set -euo pipefail
cd "$(dirname "$0")/.."

# command -> Debian package
declare -A pkg_of=([promtool]=prometheus [prometheus]=prometheus [openssl]=openssl [nats-server]=nats-server [docker-compose]=docker-compose [haproxy]=haproxy)

missing_pkgs() {
  local cmd
  for cmd in "${!pkg_of[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || echo "${pkg_of[$cmd]}"
  done | sort -u
}

# kubectl (its built-in kustomize renders k8s/ in test/deploy) is not a Debian package: it comes with
# the machine image (Google Cloud SDK's kubectl). Without it the kustomize tests are skipped, each
# with this reason in the test output (test/deploy/k8s.ts KUSTOMIZE_SKIP); said here first.
if ! command -v kubectl >/dev/null 2>&1; then
  echo "test-deps: WARNING: kubectl (1.27 or later, for \`kubectl kustomize\`) is not installed; the kustomize tests of test/deploy will be skipped. Install it from the Kubernetes packages to run them." >&2
fi

# Foundry's cast (test/e2e/cast.test.ts) and anvil (the source chain of test/e2e/bridge-crash and
# bridge-source-restart) from npm into .tmp/<tool>, where the bench installs them too (bench/targets.ts
# foundryBinary; keep the version equal to FOUNDRY_VERSION there).
FOUNDRY_VERSION="1.7.1"
for tool in cast anvil; do
  pkg="@foundry-rs/$tool-linux-amd64"
  if [ ! -x ".tmp/$tool/node_modules/$pkg/bin/$tool" ]; then
    echo "test-deps: installing $pkg@$FOUNDRY_VERSION into .tmp/$tool"
    mkdir -p ".tmp/$tool"
    if ! npm install --prefix ".tmp/$tool" --no-save --no-package-lock --no-audit --no-fund "$pkg@$FOUNDRY_VERSION" >/dev/null; then
      echo "test-deps: npm could not install $pkg@$FOUNDRY_VERSION into .tmp/$tool" >&2
      exit 1
    fi
  fi
done

mapfile -t need < <(missing_pkgs)
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }; then
    echo "test-deps: apt-get could not install ${need[*]}" >&2
    exit 1
  fi
  mapfile -t need < <(missing_pkgs)
  [ ${#need[@]} -eq 0 ] && exit 0
  echo "test-deps: still missing after apt-get install: ${need[*]}" >&2
  exit 1
fi

echo "test-deps: the tests need the Debian package(s) ${need[*]}; install them (apt-get install ${need[*]}) or run as root with apt-get" >&2
exit 1
