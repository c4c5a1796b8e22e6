#!/usr/bin/python3
# Writes a container image for the tests of local image bases (core/engine/
# image.c): an OCI image layout directory or a `docker save` tarball, from
# a JSON description, with ways to break it (tampered digests, truncated or
# corrupt layers) for the attack tests. Python's stdlib only (tarfile,
# gzip, hashlib, json).
#
#   mkimage.py SPEC.json
#
# SPEC: {"format": "oci"|"docker", "out": path, "name": "v1" (OCI ref name
#   / docker RepoTags entry), "gzip": true,
#   "config": {"Env": [...], "WorkingDir": ..., "User": ..., "Cmd": [...]},
#   "layers": [[entry, ...], ...],
#   "break": {"layer": i, "how": "digest"|"truncate"|"garbage"|"config"}}
# entry: {"name", "type": "file"|"dir"|"symlink"|"hardlink"|"chardev"|"fifo",
#   "data": text, "host": path (file contents from the host), "mode": int,
#   "link": target, "uid": int, "gid": int, "size": int (zero-filled)}
# SPDX-License-Identifier: Apache-2.0
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

TYPES = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
         "hardlink": tarfile.LNKTYPE, "chardev": tarfile.CHRTYPE, "fifo": tarfile.FIFOTYPE}


class Zeros(io.RawIOBase):
    def __init__(self, n):
        self.left = n

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k

    def readable(self):
        return True


def layer_tar(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for e in entries:
            ti = tarfile.TarInfo(e["name"])
            ti.type = TYPES[e.get("type", "file")]
            ti.mode = e.get("mode", 0o755 if ti.type == tarfile.DIRTYPE else 0o644)
            ti.uid = e.get("uid", 0)
            ti.gid = e.get("gid", 0)
            ti.mtime = 1700000000
            if ti.type in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                ti.linkname = e["link"]
            if ti.type == tarfile.CHRTYPE:
                ti.devmajor, ti.devminor = 1, 3
            f = None
            if ti.type == tarfile.REGTYPE:
                if "host" in e:
                    with open(e["host"], "rb") as h:
                        data = h.read()
                    ti.mode = e.get("mode", os.stat(e["host"]).st_mode & 0o7777)
                    f = io.BytesIO(data)
                    ti.size = len(data)
                elif "size" in e:
                    ti.size = e["size"]
                    f = io.BufferedReader(Zeros(ti.size))
                else:
                    data = e.get("data", "").encode()
                    ti.size = len(data)
                    f = io.BytesIO(data)
            t.addfile(ti, f)
    return buf.getvalue()


def sha(b):
    return hashlib.sha256(b).hexdigest()


def main():
    spec = json.load(open(sys.argv[1]))
    fmt = spec.get("format", "oci")
    out = spec["out"]
    name = spec.get("name", "")
    use_gz = spec.get("gzip", fmt == "oci")
    brk = spec.get("break", {})
    tars = [layer_tar(l) for l in spec["layers"]]
    blobs = {}
    layer_descs = []
    bodies = []
    for i, raw in enumerate(tars):
        body = gzip.compress(raw, mtime=0) if use_gz else raw
        digest = sha(body)
        if brk.get("layer") == i:
            how = brk["how"]
            if how == "digest":       # the bytes change after the manifest
                body = body[:-1] + bytes([body[-1] ^ 1])
            elif how == "truncate":   # cut, and the digest says so: the archive is short
                body = body[: len(body) // 2]
                digest = sha(body)
            elif how == "garbage":
                body = b"this is not a tar archive at all" * 64
                digest = sha(body)
        blobs[digest] = body
        bodies.append(body)
        layer_descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar" +
                            ("+gzip" if use_gz else ""), "digest": "sha256:" + digest,
                            "size": len(body)})
    config = {"architecture": "amd64", "os": "linux", "config": spec.get("config", {}),
              "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(t) for t in tars]}}
    cbytes = json.dumps(config).encode()
    cdigest = sha(cbytes)
    if brk.get("how") == "config":
        cbytes = cbytes.replace(b'"os"', b'"os" ')
    blobs[cdigest] = cbytes
    if fmt == "oci":
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                               "digest": "sha256:" + cdigest, "size": len(cbytes)},
                    "layers": layer_descs}
        mbytes = json.dumps(manifest).encode()
        mdigest = sha(mbytes)
        blobs[mdigest] = mbytes
        os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
        for d, b in blobs.items():
            with open(os.path.join(out, "blobs", "sha256", d), "wb") as f:
                f.write(b)
        with open(os.path.join(out, "oci-layout"), "w") as f:
            json.dump({"imageLayoutVersion": "1.0.0"}, f)
        m = {"mediaType": "application/vnd.oci.image.manifest.v1+json",
             "digest": "sha256:" + mdigest, "size": len(mbytes)}
        if name:
            m["annotations"] = {"org.opencontainers.image.ref.name": name}
        with open(os.path.join(out, "index.json"), "w") as f:
            json.dump({"schemaVersion": 2, "manifests": [m]}, f)
    else:  # docker save: the classic layout (<id>/layer.tar, <config>.json) or,
        # with "docker-oci", Docker 25+'s (an OCI layout with a manifest.json)
        oci_style = fmt == "docker-oci"
        with tarfile.open(out, "w") as t:
            def add(n, b):
                ti = tarfile.TarInfo(n)
                ti.size = len(b)
                t.addfile(ti, io.BytesIO(b))
            names = []
            for i, body in enumerate(bodies):
                n = ("blobs/sha256/" + sha(body)) if oci_style else "%064x/layer.tar" % (i + 1)
                add(n, body)
                names.append(n)
            cname = ("blobs/sha256/" + cdigest) if oci_style else cdigest + ".json"
            add(cname, cbytes)
            if oci_style:
                add("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
            add("manifest.json", json.dumps([{"Config": cname,
                                              "RepoTags": [name] if name else [],
                                              "Layers": names}]).encode())


if __name__ == "__main__":
    main()
