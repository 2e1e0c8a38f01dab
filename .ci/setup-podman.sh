#!/usr/bin/env bash
# Set up podman on a CI machine so the container tests can run (idempotent; run as root).
#
# Why each step (see docs/builds.md, "Containers on CI machines"):
# - runc instead of crun: crun rejects the sandbox's cgroup layout.
# - fixed default ulimits: the sandbox forbids raising rlimits, which podman does by default.
# - a locally bootstrapped base image: no container registry is reachable, only the
#   Debian mirror apt already uses. The mirror is read from apt's own configuration at
#   run time rather than hard-coded here.
# - the host's CA bundle inside the base image (named by PIP_CERT): pip reaches the
#   package index through a proxy whose CA only the host trusts.
# Machine-specific set-up lives here, never in the product Dockerfiles under builds/.
set -euo pipefail

BASE_IMAGE="${TFV_BASE_IMAGE:-localhost/tfvariants-base:bookworm}"
SUITE="${TFV_BASE_SUITE:-bookworm}"
HOST_CA="/etc/ssl/certs/ca-certificates.crt"
IMAGE_CA="/etc/ssl/certs/host-ca-bundle.crt"

log() { printf 'setup-podman: %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
    log "must run as root"
    exit 1
fi

# 1. Packages: install only what is missing (apt may be slow or busy elsewhere).
missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || missing+=(runc)
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" \
        || { apt-get update && DEBIAN_FRONTEND=noninteractive \
             apt-get install -y --no-install-recommends "${missing[@]}"; }
fi
export PATH="$PATH:/usr/sbin:/sbin"

# 2. Engine configuration.
conf=/etc/containers/containers.conf
want='[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1000:1000"]

[engine]
runtime = "runc"'
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$want" ]; then
    mkdir -p /etc/containers
    [ -f "$conf" ] && cp "$conf" "$conf.tfvariants-backup"
    printf '%s\n' "$want" > "$conf"
    log "wrote $conf"
fi

# 3. The base image.
if podman image exists "$BASE_IMAGE"; then
    log "$BASE_IMAGE already present"
    exit 0
fi

# The first Debian archive apt is configured with for this suite (one-line .list or
# deb822 .sources files), skipping security and third-party repositories.
debian_mirror() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk -v suite="$SUITE" '$1 == "deb" {
                i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                if ($(i + 1) == suite && $i !~ /security/) { print $i; exit }
            }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v suite="$SUITE" '
            /^[[:space:]]*$/ { if (uris != "" && ok) { print uris; exit } uris = ""; ok = 0; next }
            /^URIs:/ { uris = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
            END { if (uris != "" && ok) print uris }' "$f" | grep -v security || true
    done
}
mirror="$(debian_mirror | head -n 1)"
if [ -z "$mirror" ]; then
    log "no Debian mirror for suite '$SUITE' found in /etc/apt/sources.list*"
    exit 1
fi
log "bootstrapping $SUITE from $mirror"

rootfs="$(mktemp -d /var/tmp/tfvariants-base.XXXXXX)"
cleanup() {
    # debootstrap mounts /proc (and maybe more) inside the tree: unmount before deleting,
    # and never let rm cross into another file system.
    awk -v root="$rootfs" 'index($2, root "/") == 1 { print $2 }' /proc/mounts | sort -r \
        | while read -r mnt; do umount -l "$mnt" || true; done
    rm -rf --one-file-system "$rootfs"
}
trap cleanup EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    "$SUITE" "$rootfs" "$mirror" >/dev/null
if [ -f "$HOST_CA" ]; then
    cp "$HOST_CA" "$rootfs$IMAGE_CA"
fi
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" -c . | podman import \
    --change "ENV PIP_CERT=$IMAGE_CA" \
    --change 'CMD ["/bin/bash"]' \
    - "$BASE_IMAGE" >/dev/null
log "imported $BASE_IMAGE"
