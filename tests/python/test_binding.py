"""The Python binding on its own: its C declarations against the headers (a
C program compiled with them prints every size, offset and constant), and on
a store built by `bitarc ingest` from known flows: rows field by field
against those flows (a naive evaluator of a few filters), formatted rows,
counts and aggregates byte for byte against the `bitarc query` CLI, partial
aggregates merged against one aggregate, and errors."""

import ipaddress
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import bitarc
from bitarc import Formatter, Store
from bitarc._ffi import CDEF, CHECKED_STRUCTS, ffi, lib
from bitarc.aggregate import agg_records, merge_groups, stat_order, stat_spec, stat_table

import flowgen
import support

SRC_DIR = os.environ.get("BA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
FILTERS = ["any", "proto udp", "src net 10.4.0.0/16", "bytes > 10k", "ipv6", "dst port in [80 443 1024-2048]",
           "flags S and not flags AFRPU", "net 147.32.0.0/16 and proto tcp", "icmp-type 8", "not port 53"]


def cdef_prototypes():
    """The function declarations of CDEF (top-level statements with a
    parameter list that are not typedefs)."""
    body = re.sub(r"/\*.*?\*/", "", CDEF, flags=re.S)
    out, depth, cur = [], 0, ""
    for ch in body:
        cur += ch
        depth += ch == "{"
        depth -= ch == "}"
        if ch == ";" and depth == 0:
            st = " ".join(cur.split())
            if "(" in st and not st.startswith(("typedef", "enum", "struct")):
                out.append(st)
            cur = ""
    return out


def cdef_constants():
    """Every enum constant CDEF names, with cffi's value."""
    names = set(re.findall(r"\b(BA_[A-Z0-9_]+)\b", CDEF))
    return {n: getattr(lib(), n) for n in sorted(names)}


class Layout(unittest.TestCase):
    def test_structs_and_constants_match_the_headers(self):
        lines, expect = [], {}
        for s in CHECKED_STRUCTS:
            t = ffi.typeof(s)
            lines.append(f'printf("{s} %zu\\n", sizeof({s}));')
            expect[s] = ffi.sizeof(t)
            for name, f in t.fields:
                lines.append(f'printf("{s}.{name} %zu\\n", offsetof({s}, {name}));')
                expect[f"{s}.{name}"] = f.offset
        consts = cdef_constants()
        self.assertIn("BA_ORDER_TEND", consts)
        self.assertIn("BA_AGG_RECORD", consts)
        self.assertIn("BA_FMT_V6LONG", consts)
        for name, val in consts.items():
            lines.append(f'printf("{name} %lld\\n", (long long){name});')
            expect[name] = val
        # every prototype of CDEF redeclared after the headers: a differing
        # one is a compile error ("conflicting types")
        protos = cdef_prototypes()
        self.assertIn("ba_query_agg_create", " ".join(protos))
        src = "#include <stdio.h>\n#include <stddef.h>\n#include \"bitarc/bitarc.h\"\n" + \
              "\n".join(protos) + "\nint main(void) {\n" + "\n".join(lines) + "\nreturn 0;\n}\n"
        with tempfile.TemporaryDirectory() as tmp:
            c, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
            with open(c, "w") as f:
                f.write(src)
            env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # the compiler is not sanitized
            subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-Werror", "-I", os.path.join(SRC_DIR, "include"),
                            c, "-o", exe], check=True, env=env)
            out = subprocess.run([exe], stdout=subprocess.PIPE, check=True, env={}).stdout.decode()
        got = {k: int(v) for k, v in (ln.split() for ln in out.splitlines())}
        self.assertEqual(got, expect)
        self.assertEqual(bitarc.RECORD.itemsize, got["ba_record_t"])


def naive(flows, text):
    """The flows a filter of FILTERS[1:5] matches, by Python."""
    n4 = ipaddress.ip_network("10.4.0.0/16")
    pred = {
        "proto udp": lambda f: f[6] == 17,
        "src net 10.4.0.0/16": lambda f: f[2].version == 4 and f[2] in n4,
        "bytes > 10k": lambda f: f[10] > 10000,
        "ipv6": lambda f: f[2].version == 6,
    }[text]
    return [f for f in flows if pred(f)]


def key(f):
    """What a record of flow f holds: ICMP type/code is in dst_port (nfdump)."""
    return (f[0] * 1000000, f[2].packed if f[2].version == 6 else b"\0" * 10 + b"\xff\xff" + f[2].packed,
            f[4], f[15] if f[6] in (1, 58) else f[5], f[6], f[9], f[10])


def row_key(r):
    return (int(r["first_ns"]), bytes(r["src"]), int(r["src_port"]), int(r["dst_port"]), int(r["proto"]),
            int(r["packets"]), int(r["bytes"]))


def ipver_twins(groups):
    """Whether two groups have the same key fields and differ only in ipver
    (the library keeps them apart, and its sort calls them equal: their order
    is then not defined, and output is compared as sorted lines)."""
    k = np.ascontiguousarray(groups["key"]).copy()
    for f in ("first_ns", "last_ns", "out_packets", "out_bytes", "tcp_flags", "kind", "ipver", "aggr_flows"):
        k[f] = 0
    return len({bytes(x) for x in k.view(np.uint8).reshape(len(k), -1)}) != len(k)


def same_output(test, got, want, what, twins):
    if twins:
        got, want = sorted(got.splitlines()), sorted(want.splitlines())
    test.assertEqual(got, want, what)


def segs_file(d):
    return next(f for f in sorted(os.listdir(d)) if f.endswith(".bitarc"))


class OnAStore(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        sets = support.flow_sets(4000, 3000)
        cls.flows = sets[0] + sets[2]
        pcap = os.path.join(cls.tmp.name, "f.pcap")
        tagged = sorted([(f[0], 0, support.EXPORTERS[0], f) for f in sets[0]] +
                        [(f[0], 1, support.EXPORTERS[2], f) for f in sets[2]], key=lambda t: (t[0], t[1]))
        flowgen.write_ipfix_pcap(pcap, [(t[2], t[3]) for t in tagged], exporter=None)
        cls.dir = os.path.join(cls.tmp.name, "st")
        support.ingest(cls.dir, pcap)
        cls.st = Store(cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.st.close()
        cls.tmp.cleanup()

    def test_segments_cover_every_row(self):
        segs = self.st.segments()
        self.assertGreater(len(segs), 2)
        self.assertEqual(sum(s["rows"] for s in segs), len(self.flows))
        for s in segs:
            self.assertTrue(s["start_ns"] <= s["min_first_ns"] <= s["max_first_ns"] < s["end_ns"], s)
            self.assertTrue(s["name"].startswith("seg-") and s["name"].endswith(".bitarc"))

    def test_rows_field_by_field_against_the_flows(self):
        for text in ("proto udp", "src net 10.4.0.0/16", "bytes > 10k", "ipv6"):
            want = sorted(key(f) for f in naive(self.flows, text))
            rows = self.st.query(text).rows
            self.assertEqual(rows.dtype, bitarc.RECORD)
            self.assertEqual(sorted(row_key(r) for r in rows), want, text)
            self.assertEqual(self.st.count(text).count, len(want), text)
        rows = self.st.query("any").rows
        ex = {bytes(e) for e in rows["exporter"]}
        self.assertEqual(ex, {b"\0" * 10 + b"\xff\xff" + ipaddress.ip_address(x).packed
                              for x in (support.EXPORTERS[0], support.EXPORTERS[2])})
        self.assertTrue((rows["frame"] == 0).all())

    def test_formatted_rows_and_counts_equal_the_cli(self):
        for spec in ("csv", "ndjson", "line", "fmt:%ts %sa %da %sp %dp %flg %pkt %byt"):
            fmt = Formatter(spec)
            for text in FILTERS:
                # -q: no header line
                _, want, _ = support.bitarc("query", "-r", self.dir, "-q", "-o", spec, text)
                res = self.st.query(text, columns=fmt.columns())
                self.assertEqual(fmt.records(res.rows), want, f"{spec} {text}")
            _, want, _ = support.bitarc("query", "-r", self.dir, "-o", spec, "proto udp")
            self.assertTrue(want.startswith(fmt.header()), spec)
        for text in FILTERS:
            _, want, _ = support.bitarc("query", "-r", self.dir, "--count", text)
            self.assertEqual(self.st.count(text).count, int(want), text)
            self.assertEqual(self.st.query(text).count, int(want), text)

    def test_limit_and_window(self):
        full = self.st.query("proto tcp").rows
        self.assertTrue((self.st.query("proto tcp", limit=7).rows == full[:7]).all())
        a, b = bitarc.parse_window("2024/07/11.02:00-2024/07/11.03:59:59")
        got = self.st.query("proto tcp", start_ns=a, end_ns=b).rows
        want = full[(full["first_ns"] >= a) & (full["first_ns"] < b)]
        self.assertGreater(len(want), 0)
        self.assertTrue((got == want).all())

    def test_aggregates_equal_the_cli_and_merge_exactly(self):
        fmt = Formatter("csv")
        text = "proto tcp or proto udp"
        rows = self.st.query(text, columns=bitarc.COL_AGG).rows
        for fields in ("srcip", "dstip,dstport", "srcport,proto", "srcip,dstip,srcport,dstport,proto",
                       "srcip4/24,dstport", "dstip6/48", "srcip4/24,dstip4/28", "srcip4/24,dstip"):
            g, res = self.st.aggregate(text, fields)
            self.assertEqual(int(g.rows["flows"].sum()), res.count)
            # -A without -O: first-seen order; with -O: the library's order
            _, want, _ = support.bitarc("query", "-r", self.dir, "-q", "-o", "csv", "-A", fields, text)
            twins = ipver_twins(g.rows)
            same_output(self, agg_records(g, fmt, quiet=True), want, fields, twins)
            spec = bitarc.parse_agg_fields(fields)
            parts = []
            for part in np.array_split(rows, 3):
                agg = bitarc.Aggregator(spec)
                agg.add(part)
                parts.append(agg.groups())
            merged = merge_groups(parts, spec)
            for order in bitarc.ORDERS:
                top = g.top(order)
                if order in ("flows", "bytes", "pps", "tstart"):
                    _, want, _ = support.bitarc("query", "-r", self.dir, "-q", "-o", "csv", "-A", fields, "-O", order,
                                                text)
                    same_output(self, agg_records(g, fmt, order, quiet=True), want, f"{fields} -O {order}", twins)
                # partial aggregates of disjoint parts merge into the same groups
                if twins:
                    self.assertEqual(np.sort(merged.top(order).view(np.uint8).reshape(len(top), -1), axis=0).tobytes(),
                                     np.sort(top.view(np.uint8).reshape(len(top), -1), axis=0).tobytes())
                else:
                    self.assertEqual(merged.top(order).tobytes(), top.tobytes(), f"{fields}/{order}")

    def test_stat_tables_equal_the_cli_and_merge_exactly(self):
        text = "proto tcp or proto udp"
        rows = self.st.query(text, columns=bitarc.COL_AGG).rows
        for el, order, out in (("srcip", "flows", "line"), ("dstport", "bytes", "line"), ("ip", "packets", "csv"),
                               ("port", "pps", "line"), ("proto", "tstart", "line"), ("srcip4/16", "bpp", "csv"),
                               ("dstip", "bps", "line"), ("record", "bytes", "line"), ("record", "flows", "csv"),
                               ("as", "tend", "line"), ("dstport", "opkg", "csv"), ("srcip", "ibyte", "line"),
                               ("dstport:p", "bytes", "csv"), ("proto", "packets", "pipe"), ("srcport", "obps", "pipe")):
            spec, order = stat_spec(el, order)
            fmt = Formatter(out)
            g, res = self.st.aggregate(text, spec)
            for top, quiet in ((10, True), (3, False), (0, True)):
                args = ["-n", str(top)] + (["-q"] if quiet else [])
                _, want, _ = support.bitarc("query", "-r", self.dir, "-o", out, "-s", f"{el}/{order}", *args, text)
                got = stat_table(spec, order, g, res.stats, fmt, topn=top, quiet=quiet)
                if not quiet:  # the CLI's summary follows
                    want = want[:len(got)]
                same_output(self, got, want, f"-s {el}/{order} -o {out} {args}", ipver_twins(g.rows))
            parts = []
            for part in np.array_split(rows, 4):
                agg = bitarc.Aggregator(spec)
                agg.add(part)
                parts.append(agg.groups())
            if not ipver_twins(g.rows):
                o = stat_order(order)[0]
                self.assertEqual(merge_groups(parts, spec).top(o).tobytes(), g.top(o).tobytes(), el)

    def test_naive_aggregate(self):
        g, _ = self.st.aggregate("proto udp", "dstport")
        want = {}
        for f in naive(self.flows, "proto udp"):
            w = want.setdefault(f[5], [0, 0, 0])
            w[0] += 1
            w[1] += f[9]
            w[2] += f[10]
        # the library keeps IPv4 and IPv6 groups of one port apart (ipver is in its key): summed here
        got = {}
        for r in g.rows:
            w = got.setdefault(int(r["key"]["dst_port"]), [0, 0, 0])
            w[0] += int(r["flows"])
            w[1] += int(r["packets"])
            w[2] += int(r["bytes"])
        self.assertEqual(got, want)

    def test_writer_round_trip(self):
        rows = self.st.query("any").rows
        d = os.path.join(self.tmp.name, "copy")
        w = bitarc.StoreWriter(d)
        w.append(rows[:2500])
        w.append(rows[2500:])
        st = w.close()
        self.assertEqual((st["records_in"], st["records_dropped"]), (len(rows), 0))
        with Store(d) as c:
            self.assertEqual(c.query("any").rows.tobytes(), rows.tobytes())
        for args in (["-o", "csv", "any"], ["-s", "dstip/bytes", "proto tcp"]):
            self.assertEqual(support.bitarc("query", "-r", d, "-q", *args)[1],
                             support.bitarc("query", "-r", self.dir, "-q", *args)[1], args)
        with self.assertRaises(bitarc.Error):
            bitarc.StoreWriter(os.path.join(self.dir, segs_file(self.dir), "x"))

    def test_errors(self):
        with self.assertRaises(bitarc.FilterError) as cm:
            bitarc.Query("src ip 10.4.*.* and dst prot 137")
        rc, _, err = support.bitarc("query", "-r", self.dir, "src ip 10.4.*.* and dst prot 137", check=False)
        self.assertEqual(rc, 2)
        self.assertIn(f"column {cm.exception.column + 1}", err)
        with self.assertRaises(bitarc.Error) as cm:
            Store(os.path.join(self.tmp.name, "nonexistent"))
        self.assertIn("nonexistent", str(cm.exception))
        with self.assertRaises(ValueError):
            Formatter("fmt:%zz")
        with self.assertRaises(ValueError):
            bitarc.parse_window("yesterday")
        with self.assertRaises(ValueError):
            bitarc.parse_agg_fields("srcip,bogus")
        with self.assertRaises(ValueError):
            bitarc.parse_agg_fields("ip", element=False)  # a -s element, not an -A field
        with self.assertRaises(ValueError):
            bitarc.parse_agg_fields("srcip,dstip", element=True)
        with self.assertRaises(ValueError):
            bitarc.parse_order("often")
        self.assertEqual(bitarc.parse_agg_fields("srcip4/24,dstport"),
                         bitarc.AggSpec(bitarc.parse_agg_fields("srcip,dstport").fields, 24, 0, 0, split_bits=1))


if __name__ == "__main__":
    sys.exit(unittest.main())
