#!/usr/bin/env bash
# IPFIX over TCP is drained at stop as UDP is (issue 14): an exporter sends
# IPFIX messages over one TCP connection to `bitarc collect --listen tcp:...`
# while the collector is stopped (SIGSTOP), so they wait in the kernel's
# socket buffers; the connection stays open, then SIGTERM and SIGCONT. Every
# flow sent must be stored, field by field, with no drop counted. Three
# rounds, as collect_stop_drain.sh does for UDP.
set -euo pipefail
: "${BITARC:?BITARC must point to the bitarc binary}"
command -v python3 >/dev/null || { echo "SKIP: python3 not installed (scripts/deps.sh)"; exit 0; }
tmp=$(mktemp -d)
cpid=
spid=
cleanup() {
  [ -n "$cpid" ] && kill -9 "$cpid" 2>/dev/null
  [ -n "$spid" ] && kill -9 "$spid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The exporter: a template, then MSGS messages of 30 flows, over TCP to port
# $1; writes every flow it sent to $2 (one "src dst sport dport proto packets
# bytes" line each), connects, waits for the file $4, sends, prints "sent N"
# once all bytes are written, then holds the connection open until killed.
cat >"$tmp/exporter.py" <<'EOF'
import socket, struct, sys, time
port, log, msgs, go = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
# sourceIPv4Address, destinationIPv4Address, sourceTransportPort,
# destinationTransportPort, protocolIdentifier, packetDeltaCount,
# octetDeltaCount, flowStartSeconds, flowEndSeconds
ies = [(8, 4), (12, 4), (7, 2), (11, 2), (4, 1), (2, 4), (1, 4), (150, 4), (151, 4)]
now = int(time.time())
def msg(seq, sets):
    body = b"".join(sets)
    return struct.pack("!HHIII", 10, 16 + len(body), now, seq, 7) + body
tmpl = struct.pack("!HH", 256, len(ies)) + b"".join(struct.pack("!HH", i, l) for i, l in ies)
out = [msg(0, [struct.pack("!HH", 2, 4 + len(tmpl)) + tmpl])]
lines, seq, k = [], 0, 0
for m in range(msgs):
    recs = []
    for _ in range(30):
        k += 1
        src, dst = 0x0a000000 | k, 0xc0a80000 | (k * 7919 & 0xffff)
        sp, dp, pr = 1024 + k % 60000, (53, 80, 443)[k % 3], (6, 17)[k % 2]
        pk, by = 1 + k % 100, 40 + k * 13 % 100000
        recs.append(struct.pack("!IIHHBIIII", src, dst, sp, dp, pr, pk, by, now - 60, now - 30))
        lines.append("%d %d %d %d %d %d %d" % (src, dst, sp, dp, pr, pk, by))
    body = b"".join(recs)
    out.append(msg(seq, [struct.pack("!HH", 256, 4 + len(body)) + body]))
    seq += 30
with open(log, "w") as f:
    f.write("\n".join(lines) + "\n")
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(20)
print("connected", flush=True)
import os
while not os.path.exists(go):  # the collector is stopped first
    time.sleep(0.01)
s.sendall(b"".join(out))  # fits in the socket buffers while the collector sleeps
print("sent %d" % len(lines), flush=True)
time.sleep(3600)
EOF

# run NAME MSGS [collect options]: collector paused, exporter sends, SIGTERM, SIGCONT
run() {
  local name=$1 msgs=$2
  shift 2
  "$BITARC" collect --store "$tmp/$name" --listen tcp:127.0.0.1:0 --status-every 0 --report json "$@" \
    >"$tmp/$name.json" 2>"$tmp/$name.err" &
  cpid=$!
  local port=
  for _ in $(seq 200); do
    port=$(sed -n 's/.*listening on tcp:127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$tmp/$name.err" 2>/dev/null || true)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || fail "$name: collect did not start: $(cat "$tmp/$name.err")"
  # the connection is accepted, then the collector stopped, then the exporter sends
  python3 "$tmp/exporter.py" "$port" "$tmp/$name.sent" "$msgs" "$tmp/$name.go" >"$tmp/$name.exp" 2>&1 &
  spid=$!
  for _ in $(seq 200); do
    grep -q "^connected" "$tmp/$name.exp" 2>/dev/null && break
    sleep 0.05
  done
  grep -q "^connected" "$tmp/$name.exp" || fail "$name: exporter did not connect: $(cat "$tmp/$name.exp")"
  sleep 0.5  # time for the collector to accept it
  kill -STOP "$cpid"
  for _ in $(seq 200); do
    [ "$(awk '{print $3}' "/proc/$cpid/stat")" = T ] && break
    sleep 0.01
  done
  touch "$tmp/$name.go"
  for _ in $(seq 400); do
    grep -q "^sent" "$tmp/$name.exp" 2>/dev/null && break
    kill -0 "$spid" 2>/dev/null || fail "$name: exporter died: $(cat "$tmp/$name.exp")"
    sleep 0.05
  done
  grep -q "^sent" "$tmp/$name.exp" || fail "$name: the messages did not fit in the socket buffers"
  kill -TERM "$cpid"
  kill -CONT "$cpid"
  wait "$cpid" || fail "$name: collect exited with $? after SIGTERM: $(cat "$tmp/$name.err")"
  cpid=
  kill -9 "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  spid=
}

# stored NAME: the store's flows in the exporter's log format, sorted
stored() {
  "$BITARC" query --store "$tmp/$1" -o csv any |
    python3 -c '
import csv, ipaddress, sys
proto = {"TCP": 6, "UDP": 17}
rows = csv.reader(sys.stdin)
head = next(rows)
for w in rows:
    if len(w) != len(head):
        break  # the summary after the records
    r = dict(zip(head, w))
    print(int(ipaddress.IPv4Address(r["sa"])), int(ipaddress.IPv4Address(r["da"])), r["sp"], r["dp"],
          proto.get(r["pr"], r["pr"]), r["ipkt"], r["ibyt"])' | sort
}

for round in 1 2 3; do
  run "drain$round" 60
  sort "$tmp/drain$round.sent" >"$tmp/drain$round.want"
  stored "drain$round" >"$tmp/drain$round.got"
  n=$(wc -l <"$tmp/drain$round.want")
  [ "$n" -eq 1800 ] || fail "exporter logged $n flows, want 1800"
  cmp -s "$tmp/drain$round.want" "$tmp/drain$round.got" ||
    fail "stored flows differ from those sent: $(diff "$tmp/drain$round.want" "$tmp/drain$round.got" | head -5) ($(wc -l <"$tmp/drain$round.got") stored)"
  python3 - "$tmp/drain$round.json" <<'EOF' || fail "drain report: $(cat "$tmp/drain$round.json")"
import json, sys
r = json.loads(open(sys.argv[1]).read())
assert r["final"] is True
assert r["stored"] == 1800, r["stored"]
assert r["stop"]["dropped"] == 0 and r["counts"]["dropped"]["stop-timeout"] == 0, r["stop"]
assert sum(r["counts"]["dropped"].values()) == 0, r["counts"]["dropped"]
# whether the connection's thread reads them before it sees the stop flag is
# up to the scheduler; either way each message is read once
assert r["stop"]["drained"] <= r["received"] == 61, (r["stop"], r["received"])
print("  read at stop: %d of 61 messages in %.3f s" % (r["stop"]["drained"], r["stop"]["seconds"]))
EOF
  echo "IPFIX over TCP into a stopped collector, then SIGTERM (round $round): 1800 of 1800 flows stored, field by field"
  rm -rf "$tmp/drain$round"
done
