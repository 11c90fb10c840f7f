#!/usr/bin/env bash
# Installs the Debian packages some tests run, when missing: prometheus (promtool and the server,
# for test/telemetry/metrics.test.ts) and openssl (certificates for the TLS tests) and nats-server (the cluster tests). Installs only as
# root with apt-get; otherwise names what to install. Exits non-zero when a tool is still missing,
# so that no test can fail late or be skipped for want of it.
set -euo pipefail

# command -> Debian package
declare -A pkg_of=([promtool]=prometheus [prometheus]=prometheus [openssl]=openssl [nats-server]=nats-server)

missing_pkgs() {
  local cmd
  for cmd in "${!pkg_of[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || echo "${pkg_of[$cmd]}"
  done | sort -u
}

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
