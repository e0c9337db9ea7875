#!/usr/bin/env bash
# The Debian packages that `npm test` needs beyond npm, and their installation.
#
# `npm test` runs this first (npm's `pretest`), so `npm install && npm test` works on a fresh
# Debian machine. When a package is missing and we are root with apt-get, it is installed;
# otherwise the missing packages are named with the command that installs them. This script
# never fails the run itself: each test that needs a missing package fails with its name, so a
# run without them cannot pass, and the rest of the suite still reports.
#
# Fast and idempotent: when every file below exists it prints nothing and runs no apt command.
#
#   bash scripts/system-packages.sh           check, install what is missing (root + apt)
#   bash scripts/system-packages.sh --check   check only; exit 1 and name what is missing
set -euo pipefail

# One line per Debian package: its name, a file that shows it is installed (a glob is fine), and
# `lean` when its recommended packages are not wanted. Add a package here, and only here, when a
# test starts to need one.
PACKAGES='
nginx           /usr/sbin/nginx
chromium        /usr/bin/chromium
patch           /usr/bin/patch
redis-server    /usr/bin/redis-server
postgresql      /usr/lib/postgresql/*/bin/initdb
prometheus      /usr/bin/promtool                lean
podman          /usr/bin/podman
runc            /usr/sbin/runc
debootstrap     /usr/sbin/debootstrap
podman-compose  /usr/bin/podman-compose
'
# What uses them: nginx (src/devnet/nginx.system.test.ts, test/cluster.system.test.ts,
# test/ratelimit-nginx.system.test.ts, `npm run cluster`), chromium (test/landing.system.test.ts),
# patch (src/tools/text-diff/index.fuzz.e2e.test.ts), redis-server and postgresql (the cluster test and
# src/devnet/ start their own servers from these binaries; the machine's own PostgreSQL on 5432
# and Redis on 6379 are services, started before a session and by .ci/run), prometheus
# (`promtool check/test rules` in test/observability.e2e.test.ts, Prometheus in `npm run cluster`; its
# recommends are exporters we do not run), podman with runc (crun fails on this host's cgroups),
# debootstrap and podman-compose (test/container.system.test.ts builds the Dockerfile on a local
# stand-in base made with debootstrap; test/compose.system.test.ts dry-runs deploy/compose.yaml).

missing=()
lean=()
while read -r package file flag; do
  [ -n "$package" ] || continue
  compgen -G "$file" >/dev/null && continue
  if [ "${flag:-}" = lean ]; then lean+=("$package"); else missing+=("$package"); fi
done <<<"$PACKAGES"
all=("${missing[@]}" "${lean[@]}")

[ ${#all[@]} -eq 0 ] && exit 0

if [ "${1:-}" = "--check" ]; then
  echo "missing Debian packages: ${all[*]}" >&2
  exit 1
fi

if [ "$EUID" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  why="not root"
  [ "$EUID" -eq 0 ] && why="no apt-get"
  cat >&2 <<EOF
system-packages: the tests need these Debian packages, which are missing: ${all[*]}
system-packages: cannot install them here ($why); install them with
  sudo apt-get install -y ${all[*]}
system-packages: until then the tests that use them fail.
EOF
  exit 0
fi

echo "system-packages: installing Debian packages the tests need: ${all[*]}" >&2
# The tests run nginx on configs of their own (-p/-c), never the package's site: a temporary
# policy-rc.d (Debian's switch for maintainer scripts) refuses the service starts that the
# packages' postinst scripts would do (nginx on port 80), while the install runs.
policy_added=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  policy_added=1
fi
install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"; }
if ! {
  apt-get update -qq &&
    { [ ${#missing[@]} -eq 0 ] || install "${missing[@]}"; } &&
    { [ ${#lean[@]} -eq 0 ] || install --no-install-recommends "${lean[@]}"; }
} >&2; then
  echo "system-packages: apt-get could not install ${all[*]}; the tests that use them fail." >&2
fi
if [ -n "$policy_added" ]; then rm -f /usr/sbin/policy-rc.d; fi
