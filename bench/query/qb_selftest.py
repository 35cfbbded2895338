#!/usr/bin/env python3
"""Unit checks of compare.py's parts that need no tool: the readers of the
three tools' outputs (one flow as each prints it), the cross-check, the CTU-13
reader, the NetFlow v5 encoder (decoded back at the spec's offsets), the host
choice and the target table. Run by CTest (bench_query_compare_selftest)."""

import lzma
import os
import socket
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qb_data  # noqa: E402
import qb_measure as M  # noqa: E402
import qb_report  # noqa: E402

# one flow as each tool printed it (bench_query_gen, seed 1, 200 k flows)
# bitarc -o csv: nfdump 1.7.1's columns, times to the millisecond
CSV_TAIL = ("0,0,0,0,0.0.0.0,0.0.0.0,0,0,00:00:00:00:00:00,00:00:00:00:00:00,00:00:00:00:00:00,00:00:00:00:00:00,"
            + ",".join(["0-0-0"] * 10) + ",    0.000,    0.000,    0.000,127.0.0.1,0/0,0,1970-01-01 00:00:00.000")
BITARC = ("2024-07-11 00:17:31.550,2024-07-11 00:17:31.554,0.004,10.4.200.113,79.47.63.123,31165,137,TCP,"
          ".....RS.,0,0,2,1112,0,0,14,11,3012,47," + CSV_TAIL)
NFDUMP = ("2024-07-11 00:17:31,2024-07-11 00:17:31,0.004,10.4.200.113,79.47.63.123,31165,137,TCP,.....RS.,0,0,2,"
          "1112,0,0,14,11,3012,47,0,0,0,0,0.0.0.0,0.0.0.0,0,0,00:00:00:00:00:00,00:00:00:00:00:00,"
          "00:00:00:00:00:00,00:00:00:00:00:00,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,"
          "    0.000,    0.000,    0.000,127.0.0.1,0/0,1,2026-11-25 10:06:49.743")
CLICKHOUSE = ('"2024-07-11 00:17:31",550,"2024-07-11 00:17:31",0.004,"10.4.200.113","79.47.63.123",31165,137,6,6,'
              '0,2,1112,14,11,3012,47')
BITARC2 = ("2024-07-11 00:31:38.625,2024-07-11 00:31:38.629,0.004,10.4.200.153,10.5.0.227,27009,137,UDP,........,"
           "0,32,119,86513,0,0,1,0,12084,10," + CSV_TAIL)
CLICKHOUSE2 = ('"2024-07-11 00:31:38",625,"2024-07-11 00:31:38",0.004,"10.4.200.153","10.5.0.227",27009,137,17,0,'
               '32,119,86513,1,0,12084,10')
TOP_BITARC = """Top 10 Src IP Addr ordered by bytes:
Src IP Addr                                        Flows(%)           Packets(%)               Bytes(%)
10.4.0.0                                      11860(  9.9)      8393127( 10.1)     6314495943(  9.9)
10.4.0.1                                       6794(  5.6)      4735096(  5.7)     3833726478(  6.0)
"""
TOP_NFDUMP = """2024-07-11 00:00:00.370         4166.501 any            10.4.0.0    11860( 9.9)  8393127(10.1) \
6314495943( 9.9)     2014 12124314   752
2024-07-11 00:00:01.095         3858.018 any            10.4.0.1     6794( 5.6)  4735096( 5.7) 3833726478( 6.0)\
     1227  7949629   809
"""
TOP_CLICKHOUSE = '"10.4.0.0",11860,8393127,6314495943\n"10.4.0.1",6794,4735096,3833726478\n'


class Files(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        p = os.path.join(self.dir.name, name)
        with open(p, "w") as f:
            f.write(text)
        return p


class Rows(Files):
    def test_same_flow_same_canonical_row(self):
        b = M.read_rows(self.write("b", "ts,te,td\n" + BITARC + "\n" + BITARC2 + "\n"), "bitarc")
        n = M.read_rows(self.write("n", NFDUMP + "\n"), "nfdump")
        c = M.read_rows(self.write("c", CLICKHOUSE2 + "\n" + CLICKHOUSE + "\n"), "clickhouse")
        self.assertEqual(b[0], 2)
        self.assertEqual(b[1], c[1])  # order does not matter
        self.assertEqual(b[2], c[2])
        self.assertEqual(n[1], [r for r in b[1] if "10.4.200.113" in r])

    def test_one_changed_field_is_a_mismatch(self):
        b = M.read_rows(self.write("b", BITARC + "\n"), "bitarc")
        for i, v in ((12, "1113"), (8, "17"), (3, "0.005"), (9, "2")):  # bytes, proto, duration, flags
            c = CLICKHOUSE.split(",")
            c[i] = v
            got = M.read_rows(self.write("c", ",".join(c) + "\n"), "clickhouse")
            self.assertEqual(got[0], 1)
            self.assertNotEqual(got[1], b[1], "field %d" % i)
            self.assertNotEqual(got[2], b[2], "field %d" % i)
            self.assertEqual(M.diff_rows(got[1], b[1])[1], b[1])

    def test_digest_beyond_the_sort_limit(self):
        old = M.SORT_LIMIT
        M.SORT_LIMIT = 1
        try:
            a = M.read_rows(self.write("a", BITARC + "\n" + BITARC2 + "\n"), "bitarc")
            c = M.read_rows(self.write("c", CLICKHOUSE2 + "\n" + CLICKHOUSE + "\n"), "clickhouse")
            d = M.read_rows(self.write("d", CLICKHOUSE2 + "\n" + CLICKHOUSE2 + "\n"), "clickhouse")
        finally:
            M.SORT_LIMIT = old
        self.assertIsNone(a[1])
        self.assertEqual(a[2], c[2])
        self.assertNotEqual(a[2], d[2])

    def test_unreadable_row_is_an_error(self):
        with self.assertRaises(M.ToolError):
            M.read_rows(self.write("b", "2024-07-11 00:17:31,short\n"), "bitarc")


class TopAndCount(Files):
    def test_top_parsed_alike(self):
        want = [("10.4.0.0", 11860, 8393127, 6314495943), ("10.4.0.1", 6794, 4735096, 3833726478)]
        self.assertEqual(M.read_top(self.write("b", TOP_BITARC), "bitarc"), want)
        self.assertEqual(M.read_top(self.write("n", TOP_NFDUMP), "nfdump"), want)
        self.assertEqual(M.read_top(self.write("c", TOP_CLICKHOUSE), "clickhouse"), want)

    def test_top_ties_and_differences(self):
        a = [("1.1.1.1", 1, 1, 100), ("1.1.1.2", 1, 1, 50)]
        self.assertTrue(M.same_top(a, [("1.1.1.1", 1, 1, 100), ("1.1.1.3", 1, 1, 50)]))  # tie at the cut
        self.assertFalse(M.same_top(a, [("1.1.1.1", 1, 1, 100), ("1.1.1.3", 1, 1, 49)]))
        self.assertFalse(M.same_top(a, [("1.1.1.9", 1, 1, 100), ("1.1.1.2", 1, 1, 50)]))
        self.assertFalse(M.same_top(a, a[:1]))

    def test_counts(self):
        self.assertEqual(M.parse_count(self.write("s", "x\nSummary: total flows: 42, total bytes: 1\n"), "summary"),
                         42)
        self.assertEqual(M.parse_count(self.write("p", "  17\n"), "plain"), 17)
        with self.assertRaises(M.ToolError):
            M.parse_count(self.write("e", "No matching flows\n"), "summary")


class Data(Files):
    def test_ctu13_reader(self):
        p = os.path.join(self.dir.name, "c.binetflow.xz")
        with lzma.open(p, "wt") as f:
            f.write("StartTime,Dur,Proto,SrcAddr,Sport,Dir,DstAddr,Dport,State,sTos,dTos,TotPkts,TotBytes,SrcBytes,"
                    "Label\n"
                    "2011/08/16 10:01:46.972101,3599.986572,tcp,88.176.79.163,49213,  <?>,147.32.84.172,18250,"
                    "A_PA,0,0,414671,415389446,10150692,flow=Background\n"
                    "2011/08/16 10:01:47.881681,619.585266,icmp,94.0.247.147,0x0103,   ->,147.32.84.59,0x5e00,URH,"
                    "0,,6,1062,1062,flow=x\n"
                    "2011/08/16 10:01:48.000000,0,arp,00:11:22:33:44:55,,  who,ff:ff:ff:ff:ff:ff,,INT,,,1,60,60,x\n"
                    "2011/08/16 10:01:49.000000,0,udp,fe80::1,5353,  ->,ff02::fb,5353,INT,0,,1,100,100,x\n"
                    "2011/08/16 10:01:50.000000,1.5,esp,147.32.84.1,1234,  ->,147.32.84.2,99999,INT,,,3,300,300,x\n")
        flows, skipped = qb_data.read_ctu13(p)
        self.assertEqual(skipped, {"non-IP arp": 1, "IPv6": 1})
        t0 = (1313488906 * 1000000 + 972101) // 1000  # 2011-08-16 10:01:46 UTC
        self.assertEqual(flows[0], (t0, (1313488906972101 + 3599986572) // 1000, 0x58B04FA3, 0x932054AC, 49213,
                                    18250, 6, 0x18, 0, 414671, 415389446, 0, 0, 0, 0))
        self.assertEqual(flows[1][4:8], (0, 0x0103, 1, 0))  # ICMP type/code in dst_port
        self.assertEqual(flows[2][4:7], (0, 0, 50))  # ESP: no ports

    def test_v5_datagrams(self):
        r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        r.bind(("127.0.0.1", 0))
        r.settimeout(5)
        base = 1313488906972
        flows = [(base + i, base + i + 7, 0x0A000001 + i, 0xC0A80001, 1000 + i, 443, 6, 0x12, 32, 3 + i, 999 + i,
                  1, 2, 3, 4) for i in range(31)]
        qb_data.v5_send(flows, [r.getsockname()[1]], 10000)
        got = []
        for _ in range(2):
            d = r.recv(65536)
            ver, cnt, up, secs, nsecs, seq = struct.unpack_from("!HHIIII", d, 0)
            self.assertEqual((ver, len(d)), (5, 24 + 48 * cnt))
            boot = secs * 1000 + nsecs // 1000000 - up
            for k in range(cnt):
                o = 24 + 48 * k
                sa, da, = struct.unpack_from("!II", d, o)
                inif, outif, pk, by, first, last = struct.unpack_from("!HHIIII", d, o + 12)
                sp, dp = struct.unpack_from("!HH", d, o + 32)
                flags, proto, tos = d[o + 37], d[o + 38], d[o + 39]
                sas, das = struct.unpack_from("!HH", d, o + 40)
                got.append((boot + first, boot + last, sa, da, sp, dp, proto, flags, tos, pk, by, inif, outif, sas,
                            das))
            self.assertEqual(seq, 0 if len(got) == 30 else 30)
        r.close()
        self.assertEqual(got, flows)

    def test_pick_host(self):
        counts = [(0x0A040001, 500), (0x0A040002, 7), (0x0A040003, 12), (0x0B000001, 7)]
        self.assertEqual(qb_data.pick_host(counts, 10000, "10.4.", 0.0007), "10.4.0.2")
        with self.assertRaises(qb_data.LoadError):
            qb_data.pick_host([(0x0A040001, 500)], 10000, "10.4.", 0.0007)  # 5 %: not selective


class Targets(unittest.TestCase):
    def test_issue13_targets(self):
        T = qb_report.target
        self.assertEqual(T("selective", "rows", 10000000, "nfdump"), 50.0)
        self.assertEqual(T("selective", "top", 100000000, "nfdump"), 100.0)
        self.assertEqual(T("selective", "count", 10000000, "nfdump"), 100.0)
        self.assertEqual(T("broad", "rows", 10000000, "nfdump"), 3.0)
        self.assertEqual(T("selective", "rows", 10000000, "clickhouse"), 10.0)
        self.assertEqual(T("broad", "top", 10000000, "clickhouse"), 1.0)
        self.assertIsNone(T("broad", "count", 10000000, "nfdump"))
        self.assertEqual(qb_report._ratio_cells(2.0, 1.0, 3.0), ["2.0x", ">= 3x: **missed**"])
        self.assertEqual(qb_report._ratio_cells(0.5, 1.0, None), ["0.50x", "-"])

    def test_same_fields_store_line(self):
        s = {"dataset": "d", "flows": 10, "bitarc_file": 300, "bitarc_archive": 240, "bitarc_index": 60,
             "bitarc_per_record": {"archive": 24.0, "index": 6.0}, "nfdump_lz4": 470, "nfdump_raw": 1100,
             "bitarc_columns": {"first": 2.0, "misc": 2.0, "exporter": 0.5, "vlan": 0.0},
             "clickhouse": {"on_disk": 290, "compressed": 289, "columns": {"first_ms": 20}}}
        out = "\n".join(qb_report.store_table([s], True))
        self.assertIn("| 1.03x |", out)  # 30.0 / 29.0, all bytes
        self.assertIn("bitarc 27.5 B/flow = 0.95x ClickHouse's 29.0", out)  # 30.0 - 2.0 - 0.5
        self.assertIn("left out: misc 2.00, exporter 0.50)", out)


if __name__ == "__main__":
    unittest.main()
