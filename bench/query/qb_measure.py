"""Timing of whole processes (as a user runs them, output to a file) and the
cross-check of what bitarc, nfdump and ClickHouse return.

Each tool's output is reduced to canonical lines (the fields all three print,
at nfdump's csv precision: start/end to the second, duration in ms) and
compared order-independently: sorted when there are at most SORT_LIMIT rows,
otherwise by count and the sum of per-row hashes (a multiset digest)."""

import os
import re
import subprocess
import time

SORT_LIMIT = 3000000
ENV = dict(os.environ, TZ="UTC", LC_ALL="C")

PROTO_NUM = {"ICMP": 1, "IGMP": 2, "IPIP": 4, "TCP": 6, "UDP": 17, "IPV6": 41, "IP6": 41, "GRE": 47, "ESP": 50,
             "AH": 51, "ICMP6": 58, "PIM": 103, "SCTP": 132}
FLAG_BIT = {"F": 1, "S": 2, "R": 4, "P": 8, "A": 16, "U": 32, "E": 64, "C": 128}


class ToolError(Exception):
    pass


def drop_caches():
    """sync; echo 3 > /proc/sys/vm/drop_caches (root). False when not allowed."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def run_timed(cmd, out_path, shell=False):
    """Wall time of the whole process, stdout to OUT_PATH (replaced)."""
    try:
        os.unlink(out_path)
    except FileNotFoundError:
        pass
    err_path = out_path + ".err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        r = subprocess.run(cmd, stdout=out, stderr=err, env=ENV, shell=shell)
        t = time.perf_counter() - t0
    if r.returncode != 0:
        with open(err_path, errors="replace") as f:
            msg = f.read()[-600:]
        raise ToolError("%s exited with %d: %s" % (cmd if shell else " ".join(cmd), r.returncode, msg.strip()))
    return t


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


# ---------- counts ----------

def parse_count(path, kind):
    """kind: 'plain' (one integer: bitarc --count, wc -l, ClickHouse) or
    'summary' (nfdump's 'Summary: total flows: N' line)."""
    with open(path, errors="replace") as f:
        text = f.read()
    if kind == "summary":
        m = re.search(r"^Summary: total flows: (\d+)", text, re.M)
        if not m:
            raise ToolError("%s: no nfdump summary line" % path)
        return int(m.group(1))
    tok = text.split()
    if not tok or not tok[0].isdigit():
        raise ToolError("%s: expected a count, got %r" % (path, text[:80]))
    return int(tok[0])


# ---------- records ----------

def _flags(s):
    if s.isdigit():
        return int(s)
    v = 0
    for ch in s:
        v |= FLAG_BIT.get(ch, 0)
    return v


def _proto(s):
    return int(s) if s.isdigit() else PROTO_NUM.get(s.upper(), s)


def _td(s):
    return round(float(s) * 1000)


def _canon_nfdump(c):
    # ts,te,td,sa,da,sp,dp,pr,flg,fwd,stos,ipkt,ibyt,opkt,obyt,in,out,sas,das,...
    return (c[0][:19], c[1][:19], _td(c[2]), c[3], c[4], c[5], c[6], _proto(c[7]), _flags(c[8]), c[10], c[11],
            c[12], c[15], c[16], c[17], c[18])


def _canon_clickhouse(c):
    # ts,ts_ms,te,td,sa,da,sport,dport,proto,flags,tos,packets,bytes,in_if,out_if,src_as,dst_as
    return (c[0], c[2], _td(c[3]), c[4], c[5], c[6], c[7], int(c[8]), int(c[9]), c[10], c[11], c[12], c[13],
            c[14], c[15], c[16])


# bitarc -o csv prints nfdump 1.7's csv columns.
CANON = {"bitarc": _canon_nfdump, "nfdump": _canon_nfdump, "clickhouse": _canon_clickhouse}


def read_rows(path, tool):
    """Canonical rows of a records-out file: (n, sorted list or None, digest)."""
    canon = CANON[tool]
    rows, n, digest = [], 0, 0
    with open(path, errors="replace") as f:
        for line in f:
            if not line[:1].isdigit() and not line.startswith('"'):
                continue  # header, blank or trailer
            c = line.rstrip("\n").replace('"', "").split(",")
            try:
                r = "|".join(map(str, canon(c)))
            except (IndexError, ValueError) as e:
                raise ToolError("%s: unreadable %s row %r (%s)" % (path, tool, line[:120], e))
            n += 1
            digest = (digest + hash(r)) & 0xFFFFFFFFFFFFFFFF
            if rows is not None:
                rows.append(r)
                if len(rows) > SORT_LIMIT:
                    rows = None
    if rows is not None:
        rows.sort()
    return n, rows, digest


def diff_rows(a, b):
    """First few canonical rows in one sorted list and not the other."""
    sa, sb = set(a), set(b)
    only_a = sorted(sa - sb)[:3]
    only_b = sorted(sb - sa)[:3]
    return only_a, only_b


# ---------- top-N by bytes ----------

TOP_RE = re.compile(r"(\d+\.\d+\.\d+\.\d+)\s+(\d+)\(\s*[\d.]+\)\s+(\d+)\(\s*[\d.]+\)\s+(\d+)\(")


def read_top(path, tool):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            if tool == "clickhouse":
                c = line.strip().replace('"', "").split(",")
                if len(c) == 4:
                    out.append((c[0], int(c[1]), int(c[2]), int(c[3])))
                continue
            m = TOP_RE.search(line)
            if m:
                out.append((m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))))
    return out


def same_top(a, b):
    """Equal as sets; rows tied with the last byte total may differ."""
    if sorted(a) == sorted(b):
        return True
    if len(a) != len(b) or not a:
        return False
    last = min(x[3] for x in a)
    strict_a = sorted(x for x in a if x[3] > last)
    strict_b = sorted(x for x in b if x[3] > last)
    return strict_a == strict_b and sorted(x[3] for x in a) == sorted(x[3] for x in b)
