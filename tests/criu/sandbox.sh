#!/usr/bin/env bash
# criu.sandbox: the cached criu dumps a sandbox of this build's engine and
# restores it by hand, as docs/lifecycle.md ("Pause with memory to disk
# (CRIU)") describes: a `base` sandbox (--no-network) with a python3
# holding 32 MiB of random bytes and a counter; the engine stopped (SIGTERM
# leaves the sandbox); `criu dump` of its asb-init (external mounts, the log
# fd external); the restore root rebuilt as the engine builds it (the disk,
# the template's rootfs, /usr and the agent dir idmapped to the sandbox's
# uid slot, the overlay); `criu restore --root ... --inherit-fd ...`; then
# envd answers on its socket, a command runs as `user`, the counter goes on
# and the bytes' SHA-256, computed again by the restored process, is the one
# from before the dump; then the restored sandbox is dumped and restored
# again the same way. A plain criu 4.1.1 fails it (no CAP_SYS_RESOURCE:
# "Can't get rlimit 0" at dump; asb-init's O_NOFOLLOW log fd: "Too many
# levels of symbolic links" at restore): ASB_CRIU=<that criu> shows it.
# Needs root.
#
#   sandbox.sh ENGINE   (this build's agent-sandboxd)
# No criu in the cache fails, unless ASB_SKIP_CRIU=1 (then it skips, 77).
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

engine="$1"
py=/usr/bin/python3
test_name=criu.sandbox
. "$(dirname "$0")/lib.sh"

t="$(mktemp -d /tmp/asb-criu-sbx.XXXXXX)"
chmod 755 "$t"
S="$t/state" R="$t/r" IMG="$t/img"
cg="asb-criu-sbx-$$"
nspid="" restored=""
mkdir -p "$S" "$R"/{disk,l0,usr,asb,root} "$IMG"

alive() { kill -0 "$1" 2>/dev/null; }
engine_start() { # extra engine options...
  rm -f "$S/engine.url"
  "$engine" --state-dir "$S" --listen 127.0.0.1:0 --cgroup-name "$cg" --no-network --pool 0 \
    --daemon "$@"
  until_ok 60 test -s "$S/engine.url" || { tail -20 "$S/engine.log" >&2; fail "the engine did not start"; }
}
engine_stop() {
  local p
  p="$(cat "$S/engine.pid" 2>/dev/null)" || return 0
  [ -n "$p" ] && alive "$p" || return 0
  kill -TERM "$p"
  until_ok 60 sh -c "! kill -0 $p 2>/dev/null" || kill -9 "$p"
}
cleanup() {
  set +e
  engine_stop
  if [ -n "$restored" ] && alive "$restored"; then
    kill -9 "$restored"
    until_ok 20 sh -c "! kill -0 $restored 2>/dev/null"
  fi
  for m in root l0 usr asb disk; do
    mountpoint -q "$R/$m" && { umount "$R/$m" || umount -l "$R/$m"; }
  done
  [ -n "$nspid" ] && alive "$nspid" && kill -9 "$nspid"
  # An engine that finds the sandbox's asb-init gone removes what is left
  # of it (cgroups, disk, uid slot); --kill-on-exit ends any still there.
  if [ -s "$S/api_key" ]; then
    (engine_start --kill-on-exit) > /dev/null 2>&1 && engine_stop
  fi
  rm -rf "$t"
}
trap cleanup EXIT

# idmapped bind SRC DST: SRC's ids as seen through the user namespace of
# $nspid (0 -> the slot's first host uid), as the engine mounts them.
cat > "$t/idmap.py" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("set", ctypes.c_uint64), ("clr", ctypes.c_uint64),
                ("prop", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]
def chk(r, what):
    if r < 0:
        sys.exit("%s: %s" % (what, os.strerror(ctypes.get_errno())))
    return r
src, dst, pid = sys.argv[1:4]
# open_tree(OPEN_TREE_CLONE|O_CLOEXEC), mount_setattr(MOUNT_ATTR_IDMAP), move_mount
fd = chk(libc.syscall(428, -100, src.encode(), 1 | 0o2000000), "open_tree " + src)
a = Attr(0x100000, 0, 0, os.open("/proc/%s/ns/user" % pid, os.O_RDONLY))
chk(libc.syscall(442, fd, b"", 0x1000, ctypes.byref(a), ctypes.c_size_t(32)), "mount_setattr " + src)
chk(libc.syscall(429, fd, b"", -100, dst.encode(), 4), "move_mount " + dst)
PY
# envd's process.Process/Start (Connect, JSON): URL HOST TOKEN CMD [UNIX]
cat > "$t/run.py" <<'PY'
import base64, json, socket, struct, sys, http.client
url, host, token, cmd = sys.argv[1:5]
unix = sys.argv[5] if len(sys.argv) > 5 else None
class UnixConn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(60)
        self.sock.connect(unix)
c = UnixConn("x") if unix else http.client.HTTPConnection(url.split("//")[1], timeout=60)
body = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}).encode()
c.request("POST", "/process.Process/Start", struct.pack(">BI", 0, len(body)) + body,
          {"Content-Type": "application/connect+json", "Host": host,
           "X-Access-Token": token, "Connect-Protocol-Version": "1"})
d = c.getresponse().read()
i, rc = 0, 1
while i + 5 <= len(d):
    _, n = struct.unpack(">BI", d[i:i + 5]); m = json.loads(d[i + 5:i + 5 + n]); i += 5 + n
    ev = m.get("event", {}); data = ev.get("data") or {}
    if "stdout" in data: sys.stdout.write(base64.b64decode(data["stdout"]).decode())
    if "stderr" in data: sys.stderr.write(base64.b64decode(data["stderr"]).decode())
    if "end" in ev: rc = 0 if ev["end"].get("exited") and ev["end"].get("exitCode", 0) == 0 else 1
    if "error" in m: sys.stderr.write("error: %s\n" % m["error"])
sys.exit(rc)
PY
cat > "$t/holder.py" <<'PY'
import hashlib, os, signal, time
data = bytearray(os.urandom(32 << 20))
def put(name, text):
    with open("/tmp/" + name + ".tmp", "w") as f: f.write(text)
    os.rename("/tmp/" + name + ".tmp", "/tmp/" + name)
signal.signal(signal.SIGUSR1, lambda *_: put("hash.after", hashlib.sha256(data).hexdigest()))
put("hash.before", hashlib.sha256(data).hexdigest())
n = 0
while True:
    n += 1; put("count", str(n)); time.sleep(0.05)
PY

echo "== a sandbox with a python3 holding 32 MiB"
engine_start
K="$(cat "$S/api_key")" U="$(cat "$S/engine.url")"
curl -sf -H "X-API-Key: $K" -d '{"templateID":"base","timeout":600}' "$U/sandboxes" > "$t/sbx.json" ||
  fail "create failed"
ID="$(sed 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/' "$t/sbx.json")"
TOK="$(sed 's/.*"envdAccessToken":"\([a-z0-9]*\)".*/\1/' "$t/sbx.json")"
src="$(base64 -w0 "$t/holder.py")"
$py "$t/run.py" "$U" "49983-$ID.localhost" "$TOK" \
  "echo $src | base64 -d > /tmp/holder.py; setsid python3 /tmp/holder.py </dev/null >/dev/null 2>&1 &
   for i in \$(seq 600); do [ -s /tmp/count ] && break; sleep 0.05; done; cat /tmp/hash.before" \
  > "$t/hash.before" || fail "starting the python3 failed"
[ -s "$t/hash.before" ] || fail "no hash from the python3"
st="$S/sandboxes/$ID/state"
PID="$(awk -F= '$1 == "pid" {print $2}' "$st")"
H="$(awk -F= '$1 == "host_uid" {print $2}' "$st")"
[ -n "$PID" ] && [ -n "$H" ] && alive "$PID" || fail "no asb-init pid in $st"
# The engine closes its connections to envd (the dump refuses a socket of
# its netns) and does not see the dump end the tree (it would remove the
# sandbox's disk): stopped, it leaves the sandbox running.
engine_stop
alive "$PID" || fail "the sandbox ended with the engine"

# dump_tree PID IMG: dumps the sandbox whose asb-init is PID (which ends it).
dump_tree() {
  local pid="$1" img="$2"
  echo "== criu dump ($pid)"
  mkdir -p "$img"
  dext=() rext=() n=0
  # External: every bind from outside the sandbox's mount namespace (a root
  # other than "/", or idmapped); on restore each gets its host source.
  while read -r _ _ _ root mp opts rest; do
    [ "$root" != / ] || [[ ",$opts," == *,idmapped,* ]] || continue
    fstype=" $rest" fstype="${fstype#* - }" fstype="${fstype%% *}"
    case "$mp" in
      /usr) host="$R/usr" ;;
      /.asb) host="$R/asb" ;;
      /run/asb | /proc/sys/kernel/random/boot_id) host="$R/disk$root" ;; # the boot id: log/boot_id of the disk
      /run/asb/cgroup/*)
        host="$(awk -F= -v k="cgroup.${mp##*/}" '$1 == k {print $2}' "$st")/workload" ;;
      *) [ "$fstype" = devtmpfs ] || fail "unexpected mount $mp ($fstype, root $root)"
         host="/dev$root" ;;
    esac
    n=$((n + 1))
    dext+=(--external "mnt[$mp]:m$n")
    rext+=(--external "mnt[m$n]:$host")
  done < "/proc/$pid/mountinfo"
  mnt="$(awk '/^mnt_id:/ {printf "%x", $2}' "/proc/$pid/fdinfo/1")"
  ino="$(printf %x "$(stat -L -c %i "/proc/$pid/fd/1")")"
  logkey="file[$mnt:$ino]"
  "$criu" dump -t "$pid" -D "$img" -o dump.log "${dext[@]}" --external "$logkey" \
    --network-lock nftables --irmap-scan-path /home ||
    { grep -E '^Error|^ *[0-9]+: Error' "$img/dump.log" >&2; fail "criu dump failed"; }
  until_ok 20 sh -c "! kill -0 $pid 2>/dev/null" || fail "the sandbox outlived its dump"
  echo "dumped: $(du -sm "$img" | cut -f1) MB of images"
}
# restore_tree IMG: restores it onto the root in $R.
restore_tree() {
  local img="$1"
  echo "== criu restore"
  rm -f "$t/restored.pid"
  exec 7>> "$R/disk/log/agent.log"
  "$criu" restore -D "$img" -o restore.log -d --pidfile "$t/restored.pid" --root "$R/root" \
    "${rext[@]}" --inherit-fd "fd[7]:$logkey" ||
    { grep -E '^Error|^ *[0-9]+: Error' "$img/restore.log" >&2; fail "criu restore failed"; }
  exec 7>&-
  restored="$(cat "$t/restored.pid")"
  alive "$restored" || fail "no restored asb-init"
}
# check_envd: envd answers, the python3 goes on with its bytes intact.
check_envd() {
  echo "== envd after the restore"
  sock="$R/disk/run/envd.sock"
  code="$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$sock" http://x/health)"
  [ "$code" = 204 ] || fail "envd's /health answered $code"
  out="$($py "$t/run.py" x x "$TOK" \
    'id -un; c=$(cat /tmp/count); rm -f /tmp/hash.after; kill -USR1 $(pidof python3);
     for i in $(seq 600); do [ -s /tmp/hash.after ] && [ "$(cat /tmp/count)" -gt "$c" ] && break; sleep 0.05; done
     echo "$c $(cat /tmp/count)"; cat /tmp/hash.after' "$sock")" || fail "a command after the restore failed"
  echo "$out"
  [ "$(sed -n 1p <<< "$out")" = user ] || fail "the command did not run as user"
  read -r c1 c2 <<< "$(sed -n 2p <<< "$out")"
  [ "$c2" -gt "$c1" ] || fail "the counter did not go on ($c1 -> $c2)"
  [ "$(sed -n 3p <<< "$out")" = "$(cat "$t/hash.before")" ] || fail "the 32 MiB changed across the dump"
  echo "counter $c1 -> $c2, sha256 unchanged"
}

dump_tree "$PID" "$IMG/1"
echo "== the restore root"
unshare -U sleep infinity &
nspid=$!
own_userns() { [ "$(readlink "/proc/$nspid/ns/user")" != "$(readlink /proc/self/ns/user)" ]; }
until_ok 10 own_userns || fail "no user namespace helper"
echo "0 $H 65536" > "/proc/$nspid/uid_map"
echo "0 $H 65536" > "/proc/$nspid/gid_map"
until_ok 20 sh -c "! losetup -j '$S/sandboxes/$ID/disk.img' | grep -q ." || fail "the disk is still attached"
mount -o loop "$S/sandboxes/$ID/disk.img" "$R/disk"
$py "$t/idmap.py" "$S/templates/base/rootfs" "$R/l0" "$nspid"
$py "$t/idmap.py" /usr "$R/usr" "$nspid"
$py "$t/idmap.py" "$S/agent" "$R/asb" "$nspid"
mount -t overlay overlay \
  -o "lowerdir=$R/l0,upperdir=$R/disk/upper,workdir=$R/disk/work,userxattr" "$R/root"

restore_tree "$IMG/1"
check_envd
# Again from the restored sandbox (its mounts now come from the root above).
dump_tree "$restored" "$IMG/2"
restore_tree "$IMG/2"
check_envd
echo "criu.sandbox: ok (dumped and restored twice)"
