#!/bin/sh
# Writes an OCI image layout of Debian's busybox-static (a root without
# glibc) to $1 (default /var/lib/agent-sandbox/images/busybox-oci), its manifest named v1: one
# gzip'd layer, a config with an Env. Only coreutils, tar and gzip, to show
# the format; skopeo or `docker save` make the same from real images:
#   skopeo copy docker://alpine:3.19 oci:/tmp/alpine-oci:3.19
#   docker save -o /tmp/alpine.tar alpine:3.19
# Then:  asb template build examples/templates/busybox-image
# SPDX-License-Identifier: Apache-2.0
set -eu
out=${1:-/var/lib/agent-sandbox/images/busybox-oci}
bb=/bin/busybox
[ -x "$bb" ] || bb=/usr/bin/busybox
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root/bin" "$out/blobs/sha256"
cp "$bb" "$work/root/bin/busybox"
ln -s busybox "$work/root/bin/sh"
echo "made from busybox-static" > "$work/root/README"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/root" -cf "$work/layer.tar" .
gzip -n -c "$work/layer.tar" > "$work/layer.tgz"
sha() { sha256sum "$1" | cut -d' ' -f1; }
blob() { cp "$1" "$out/blobs/sha256/$(sha "$1")"; }
printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/bin","GREETING=hello from the image"],"Cmd":["sh"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$(dpkg --print-architecture)" "$(sha "$work/layer.tar")" > "$work/config.json"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
  "$(sha "$work/config.json")" "$(stat -c %s "$work/config.json")" \
  "$(sha "$work/layer.tgz")" "$(stat -c %s "$work/layer.tgz")" > "$work/manifest.json"
blob "$work/layer.tgz"
blob "$work/config.json"
blob "$work/manifest.json"
printf '{"imageLayoutVersion":"1.0.0"}' > "$out/oci-layout"
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"v1"}}]}' \
  "$(sha "$work/manifest.json")" "$(stat -c %s "$work/manifest.json")" > "$out/index.json"
echo "$out (oci:$out:v1)"
