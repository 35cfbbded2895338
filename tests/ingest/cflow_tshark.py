#!/usr/bin/env python3
"""Reads `tshark -T json --no-duplicate-keys` (run with TZ=UTC) of NetFlow
v5/v9 and IPFIX datagrams and turns every record tshark decoded into the
values bitarc must store for it (ingest_dump column names), applying
bitarc's documented conventions (doc/decoders.md, "Against tshark") as named
rules, counted per exporter:

  records(json) -> {exporter: Exporter (flows, options, no_template,
                                         unreadable, ambiguous)}

Each rec is a dict of bitarc's fields: the values tshark decoded, and 0 (or
empty) for a field no element tshark decoded sets (bitarc must not invent
one), plus "_rules", the rules that shaped it and "_scale", the factor of
the sampling-scaled counters. Only tshark's values are used; the
conventions are:

  icmp-ports      ICMP/ICMPv6: sport 0, dport type<<8|code, from the ICMP
                  elements (32/139, 176-179) or else the destination port
  uptime-times    v5/v9 (and IPFIX 21/22 with systemInitTimeMilliseconds)
                  uptime times made absolute: boot = export time - sysUpTime
                  (v9/v5), a start above the end wrapped (start - 2^32 ms)
  uptime-no-init  IPFIX 21/22 without an init time: unusable (no-time)
  tshark-zero-uptime-start  tshark shows an uptime start (22) of 0 as the
                  absolute time 0: taken as uptime 0
  l4-port-variants  udp/tcp port elements 180-183, which tshark shows as
                  srcport/dstport beside 7/11: bitarc reads 7/11
  no-end          a start without an end: end = start
  no-start        an end without a start: start = end
  no-time         no time element (or IPFIX uptimes without an init time):
                  the export time
  event-time      only observationTimeMilliseconds (323): start = it
  counters-alt    no delta counter (1/2): total (85/86), then initiator
                  (231/298) counters; out: 23/24, then 171/172, reverse
                  85/86 or 1/2 (RFC 5103), then responder (232/299)
  reverse-flags   RFC 5103 reverse tcpControlBits OR-ed into the flags
  reverse-skipped other RFC 5103 reverse elements (ToS, VLAN, ICMP): not kept
  flags-8bit      IPFIX 16-bit tcpControlBits: the low 8 bits are kept
  vlan-12bit      VLAN ids: the low 12 bits
  v9-engine       v9: engine type/id = source id >> 8 / & 0xff unless 38/39
                  send a non-zero value
  v4-v6-pair      a template with IPv4 and IPv6 addresses: the non-zero pair
  ixia-reverse-counters  IXIA's own reverse octet/packet delta counts (PEN
                  3054, elements 176/177): not read (nor by nfdump); out
                  counters stay 0 (counted where they are not 0)
  mpls-labels     70-79 as bitarc keeps them: label<<4 | exp<<1 | bos, up to
                  the first zero entry
  frame-record    a sampled frame (dataLinkFrameSection, 315) and no address
                  element: addresses, protocol, ports, ToS, TCP flags, ICMP
                  and (unless 58 is sent) VLAN from the outermost IP header
                  tshark dissects in it; bytes = dataLinkFrameSize (312),
                  packets 1
  tshark-mpls-cw  tshark finds no IP header behind an MPLS stack with a
                  pseudowire control word (it dissects the inner frame 4
                  bytes off): the header fields are not compared
  sub-template-list  RFC 6313 lists (292/293), which tshark 4.0 shows as raw
                  bytes: their records are cut by the sub-templates tshark
                  decoded and their MAC addresses (56/57/80/81) taken
  sampling-rate   the rate a sampler announced in options data gives (its id
                  48/302 named in the record, else the domain's generic 34/35
                  one; a plain interval N is 1 packet in N), else the v5
                  header's interval, else one sent in the record (34, 50,
                  305/306); nfdump's convention: counters are scaled only
                  by an options sampler or the v5 header (_scale)
  options-records, no-template  records of options templates and sets
                  without a template: counted, not flows
  tshark-malformed-set  the records of a set after one tshark threw on
  held-until-template  a data set before its template (tshark -2 decodes
                  it with the later template): taken when the template's
                  frame is reached, with the samplers known then, as bitarc
                  decodes held sets when their template arrives
"""
import calendar
import collections
import re

MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}
REV_PEN = "29305"
# element id -> tshark key, for elements whose reverse (PEN 29305) form
# tshark dissects under the forward key (then the key holds a list)
ELEM_KEY = {
    1: "cflow.octets", 2: "cflow.packets", 85: "cflow.permanent_octets", 86: "cflow.permanent_packets",
    4: "cflow.protocol", 5: "cflow.tos", 6: "cflow.tcpflags", 7: "cflow.srcport", 11: "cflow.dstport",
    8: "cflow.srcaddr", 12: "cflow.dstaddr", 27: "cflow.srcaddrv6", 28: "cflow.dstaddrv6",
    9: "cflow.srcmask", 13: "cflow.dstmask", 10: "cflow.inputint", 14: "cflow.outputint",
    15: "cflow.nexthop", 62: "cflow.nexthopv6", 16: "cflow.srcas", 17: "cflow.dstas",
    21: "cflow.timeend", 22: "cflow.timestart", 152: "cflow.abstimestart", 153: "cflow.abstimeend",
    32: ("cflow.icmp_type_code_ipv4", "cflow.icmp_ipv4_type", "cflow.icmp_ipv4_code"),
    139: ("cflow.icmp_type_code_ipv6", "cflow.icmp_ipv6_type", "cflow.icmp_ipv6_code"),
    176: "cflow.icmp_ipv4_type", 177: "cflow.icmp_ipv4_code", 178: "cflow.icmp_ipv6_type",
    179: "cflow.icmp_ipv6_code", 56: "cflow.srcmac", 80: "cflow.dstmac", 58: "cflow.vlanid",
    61: "cflow.direction", 136: "cflow.flow_end_reason",
    180: "cflow.srcport", 181: "cflow.dstport", 182: "cflow.srcport", 183: "cflow.dstport"}
# udp/tcp port elements tshark shows as srcport/dstport; bitarc reads 7/11
# (rule l4-port-variants: used only when 7/11 are absent)
SECONDARY = {180, 181, 182, 183}
ELEM_KEY = {t: k if isinstance(k, tuple) else (k,) for t, k in ELEM_KEY.items()}
USED_KEYS = {k for ks in ELEM_KEY.values() for k in ks} | {
    "cflow.srcaddrv6", "cflow.dstaddrv6", "cflow.srcas", "cflow.dstas", "cflow.srcmask", "cflow.dstmask",
    "cflow.srcmaskv6", "cflow.dstmaskv6", "cflow.post_tos", "cflow.direction", "cflow.nexthop", "cflow.nexthopv6",
    "cflow.bgpnexthop", "cflow.bgpnexthopv6", "cflow.srcmac", "cflow.dstmac", "cflow.post_srcmac",
    "cflow.post_dstmac", "cflow.dot1q_vlan_id", "cflow.post_vlanid", "cflow.post_dot1q_vlan_id",
    "cflow.post_natsource_ipv4_address", "cflow.post_natdestination_ipv4_address",
    "cflow.post_naptsource_transport_port", "cflow.post_naptdestination_transport_port", "cflow.nat_event",
    "cflow.firewall_event", "cflow.fw_ext_event", "cflow.ingress_vrfid", "cflow.egress_vrfid", "cflow.flows",
    "cflow.engine_type", "cflow.engine_id", "cflow.post_octets", "cflow.post_packets", "cflow.initiator_octets",
    "cflow.responder_octets", "cflow.initiator_packets", "cflow.responder_packets", "cflow.timestart",
    "cflow.timeend", "cflow.observation_time_milliseconds", "cflow.icmp_ipv4_type", "cflow.icmp_ipv4_code",
    "cflow.icmp_ipv6_type", "cflow.icmp_ipv6_code", "cflow.sampler_id", "cflow.sampling_interval",
    "cflow.sampling_algorithm", "cflow.peer_srcas", "cflow.peer_dstas", "cflow.octets64", "cflow.packets64",
    "cflow.post_total_octets", "cflow.post_total_packets", "cflow.sys_init_time"}


# bitarc fields that are 0 (or empty) unless an element tshark decodes sets
# them (engine, domain, sampling and times have rules of their own)
ZERO_DEFAULT = ("sport dport proto flags tos packets bytes in_if out_if src_as dst_as vlan out_packets out_bytes "
                "next_hop bgp_next_hop src_mask dst_mask dst_tos dst_vlan xsrc xdst xsrc_port xdst_port nat_event "
                "fw_event fw_xevent ingress_vrf egress_vrf mpls in_src_mac out_dst_mac in_dst_mac out_src_mac "
                "prev_as next_as direction aggr_flows icmp_type icmp_code").split()


class Ambiguous(Exception):
    pass


def abs_ns(s):
    """'Oct  9, 2015 09:47:49.599000000 UTC' -> ns since 1970."""
    m = re.match(r"(\w{3})\s+(\d+), (\d+) (\d+):(\d+):(\d+)(?:\.(\d+))?", s)
    if not m:
        raise ValueError("time %r" % s)
    mo, dd, yy, hh, mi, ss, frac = m.groups()
    sec = calendar.timegm((int(yy), MONTHS[mo], int(dd), int(hh), int(mi), int(ss), 0, 0, 0))
    return sec * 10**9 + int((frac or "0").ljust(9, "0")[:9])


def rel_ms(s):
    """'2063.044000000' (seconds) -> ms."""
    a, _, b = s.partition(".")
    return int(a) * 1000 + int((b or "0").ljust(3, "0")[:3])


def num(v):
    return int(v, 0)


def listify(v):
    return v if isinstance(v, list) else [v]


def tmpl_fields(t):
    """[(type, pen, length)] of a template dict, in order (type 0: an
    enterprise element tshark does not know)."""
    out = []
    for k, v in t.items():
        if k.startswith("Field ") and isinstance(v, dict):
            ty = v.get("cflow.template_ipfix_field_type", v.get("cflow.template_field_type",
                                                                v.get("cflow.scope_field_type", "0")))
            out.append((int(ty), v.get("cflow.template_ipfix_field_pen", ""),
                        int(v.get("cflow.template_field_length", "0"))))
    return out


class Exporter:
    def __init__(self):
        self.templates = {}  # (version, domain, id) -> ("data"|"options", fields)
        self.sysinit_ms = None
        self.samplers = {}  # (domain, generic, id) -> (packet interval, space interval, algorithm)
        self.flows, self.options, self.no_template = [], 0, 0
        self.unreadable = 0  # records of sets tshark stopped in (tshark-malformed-set)
        self.ambiguous = []  # records whose list values the template cannot assign
        self.held = []  # (template frame, header, set id, set, records): data sets before their template
        self.rules = collections.Counter()


def flatten(rec):
    """A record's values with the time subtree merged in."""
    out = {}
    for k, v in rec.items():
        if k == "cflow.timedelta_tree":
            for t in listify(v):
                if isinstance(t, dict):
                    out.update(t)
        else:
            out[k] = v
    return out


def split_dir(rec, fields):
    """key -> (forward values, reverse values): a key tshark gives as a list
    is split by the template's fields that map to it."""
    fwd, rev = {}, {}
    for k, v in rec.items():
        if not isinstance(v, list) or k not in USED_KEYS:  # a key bitarc's fields do not come from
            fwd[k] = v
            continue
        src = [(t, pen) for t, pen, _ in (fields or []) if k in ELEM_KEY.get(t, ())]
        if len(src) != len(v):
            raise Ambiguous("%s holds %d values, the template %d fields mapped to it" % (k, len(v), len(src)))
        f = [x for x, (t, pen) in zip(v, src) if pen != REV_PEN and t not in SECONDARY]
        f = f or [x for x, (t, pen) in zip(v, src) if pen != REV_PEN]
        r = [x for x, (_, pen) in zip(v, src) if pen == REV_PEN]
        if any(t in SECONDARY for t, _ in src):
            fwd.setdefault("_l4var", 0)
            fwd["_l4var"] += 1
        if f:
            fwd[k] = f[0] if len(f) == 1 else f
        if r:
            rev[k] = r[0] if len(r) == 1 else r
    return fwd, rev


def expect(hdr, rec, fields, ex):
    """The bitarc record for tshark record rec (flattened)."""
    rules = collections.Counter()
    fwd, rev = split_dir(rec, fields)
    g = fwd.get
    e = {}
    if fwd.get("_l4var"):
        rules["l4-port-variants"] += 1
    v4s, v4d, v6s, v6d = g("cflow.srcaddr"), g("cflow.dstaddr"), g("cflow.srcaddrv6"), g("cflow.dstaddrv6")
    if (v4s or v4d) and (v6s or v6d):
        rules["v4-v6-pair"] += 1
        if v6s not in (None, "::") or v6d not in (None, "::"):
            v4s = v4d = None
        else:
            v6s = v6d = None
    src, dst = v6s or v4s, v6d or v4d
    e["src"] = src if src else "0.0.0.0"
    e["dst"] = dst if dst else ("::" if ":" in e["src"] else "0.0.0.0")
    if ":" in e["dst"] and e["src"] == "0.0.0.0":
        e["src"] = "::"
    e["ipver"] = 6 if ":" in e["src"] else 4
    for k, f in (("cflow.srcport", "sport"), ("cflow.dstport", "dport"), ("cflow.protocol", "proto"),
                 ("cflow.inputint", "in_if"), ("cflow.outputint", "out_if"), ("cflow.srcas", "src_as"),
                 ("cflow.dstas", "dst_as"), ("cflow.srcmask", "src_mask"), ("cflow.dstmask", "dst_mask"),
                 ("cflow.srcmaskv6", "src_mask"), ("cflow.dstmaskv6", "dst_mask"), ("cflow.tos", "tos"),
                 ("cflow.post_tos", "dst_tos"), ("cflow.direction", "direction"),
                 ("cflow.post_naptsource_transport_port", "xsrc_port"),
                 ("cflow.post_naptdestination_transport_port", "xdst_port"), ("cflow.nat_event", "nat_event"),
                 ("cflow.firewall_event", "fw_event"), ("cflow.fw_ext_event", "fw_xevent"),
                 ("cflow.ingress_vrfid", "ingress_vrf"), ("cflow.egress_vrfid", "egress_vrf"),
                 ("cflow.peer_srcas", "prev_as"), ("cflow.peer_dstas", "next_as"), ("cflow.flows", "aggr_flows"),
                 ("cflow.engine_type", "engine_type"), ("cflow.engine_id", "engine_id")):
        if g(k) is not None:
            e[f] = num(g(k))
    for k, f in (("cflow.vlanid", "vlan"), ("cflow.dot1q_vlan_id", "vlan"), ("cflow.post_vlanid", "dst_vlan"),
                 ("cflow.post_dot1q_vlan_id", "dst_vlan")):
        if g(k) is not None and f not in e:
            v = num(g(k))
            if v > 0xfff:
                rules["vlan-12bit"] += 1
            e[f] = v & 0xfff
    for k, f in (("cflow.nexthop", "next_hop"), ("cflow.nexthopv6", "next_hop"), ("cflow.bgpnexthop", "bgp_next_hop"),
                 ("cflow.bgpnexthopv6", "bgp_next_hop"), ("cflow.post_natsource_ipv4_address", "xsrc"),
                 ("cflow.post_natdestination_ipv4_address", "xdst"), ("cflow.post_nat_source_ipv6_address", "xsrc"),
                 ("cflow.post_nat_destination_ipv6_address", "xdst")):
        if g(k) is not None and g(k) not in ("0.0.0.0", "::"):
            e[f] = g(k)
        elif g(k) is not None:
            e.setdefault(f, "")
    for k, f in (("cflow.srcmac", "in_src_mac"), ("cflow.post_dstmac", "out_dst_mac"), ("cflow.dstmac", "in_dst_mac"),
                 ("cflow.post_srcmac", "out_src_mac")):
        if g(k) is not None:
            e[f] = int(g(k).replace(":", ""), 16)
    if "cflow.tcpflags" in fwd or "cflow.tcpflags" in rev:
        fl = num(g("cflow.tcpflags", "0"))
        if fl > 0xff:
            rules["flags-8bit"] += 1
        fl &= 0xff
        if "cflow.tcpflags" in rev:
            rules["reverse-flags"] += 1
            fl |= num(rev["cflow.tcpflags"]) & 0xff
        e["flags"] = fl
    counters(e, fwd, rev, rules)
    if set(rev) - {"cflow.octets", "cflow.packets", "cflow.permanent_octets", "cflow.permanent_packets",
                   "cflow.tcpflags"}:
        rules["reverse-skipped"] += 1  # reverse ToS, VLAN, ICMP, ...: not kept
    if any(num(g(k) or "0") for k in ("cflow.pie.ixia.reverse-octet-delta-count",
                                      "cflow.pie.ixia.reverse-packet-delta-count")):
        rules["ixia-reverse-counters"] += 1
    if hdr["version"] == 9 and not (e.get("engine_type") and e.get("engine_id")):
        rules["v9-engine"] += 1  # a 0 or missing 38/39 comes from the source id (nfdump)
        e["engine_type"] = e.get("engine_type") or (hdr["domain"] >> 8) & 0xff
        e["engine_id"] = e.get("engine_id") or hdr["domain"] & 0xff
    if hdr["version"] in (9, 10):
        e["obs_domain"] = hdr["domain"]
    if hdr["version"] == 10:  # IPFIX: engine only from 38/39
        e.setdefault("engine_type", 0)
        e.setdefault("engine_id", 0)
    times(e, hdr, fwd, ex, rules, fields)
    sub_lists(e, rec, fields, hdr, ex, rules)
    mpls(e, rec, rules)
    frame(e, rec, rules)
    icmp(e, fwd, rules)
    for f in ZERO_DEFAULT:  # what tshark did not decode, bitarc must not invent
        if not e.get("_skip_" + f):
            e.setdefault(f, "" if f in ("next_hop", "bgp_next_hop", "xsrc", "xdst", "mpls") else 0)
    e["_rules"] = rules
    return e


SUB_MACS = {56: "in_src_mac", 57: "out_dst_mac", 80: "in_dst_mac", 81: "out_src_mac"}


def stl_records(b, multi, hdr, ex):
    """The sub-records [(type, bytes)...] of a subTemplateList (multi=False)
    or subTemplateMultiList value, or None if b is not one."""
    blocks, off = [], 1
    if multi:
        while off < len(b):
            if off + 4 > len(b):
                return None
            tid, n = int.from_bytes(b[off:off + 2], "big"), int.from_bytes(b[off + 2:off + 4], "big")
            if n < 4 or off + n > len(b):
                return None
            blocks.append((tid, b[off + 4:off + n]))
            off += n
    elif len(b) >= 3:
        blocks.append((int.from_bytes(b[1:3], "big"), b[3:]))
    out = []
    for tid, body in blocks:
        kind, fields = ex.templates.get((hdr["version"], hdr["domain"], tid), (None, None))
        lens = [n for _, _, n in fields or []]
        if kind != "data" or not lens or 65535 in lens or len(body) % sum(lens):
            return None
        for r in range(0, len(body), sum(lens)):
            o, rec = r, []
            for (t, pen, n) in fields:
                rec.append((t if not pen else -1, body[o:o + n]))
                o += n
            out.append(rec)
    return out


def sub_lists(e, rec, fields, hdr, ex, rules):
    types = {t for t, _, _ in fields or []}
    if not types & {292, 293}:
        return
    for v in listify(rec.get("cflow.enterprise_private_entry", [])):
        try:
            b = bytes.fromhex(v.replace(":", "")) if isinstance(v, str) else b""
        except ValueError:
            continue
        recs = stl_records(b, 293 in types, hdr, ex) if b else None
        if not recs:
            continue
        rules["sub-template-list"] += 1
        for r in recs:
            for t, val in r:
                if t in SUB_MACS:
                    e[SUB_MACS[t]] = int.from_bytes(val, "big")
        return


def mpls(e, rec, rules):
    labels = []
    for k, v in rec.items():
        m = re.match(r"MPLS-Label(\d+):", k)
        if m and isinstance(v, dict):
            labels.append((int(m.group(1)), num(v["cflow.mpls_label"]) << 4 | num(v["cflow.mpls_exp"]) << 1
                           | num(v["cflow.mpls_bos"])))
    if labels:
        rules["mpls-labels"] += 1
        out = []
        for _, v in sorted(labels):
            if not v:
                break
            out.append(str(v))
        e["mpls"] = "/".join(out)


def frame(e, rec, rules):
    """Header fields of a sampled frame tshark dissected."""
    tree = rec.get("cflow.data_link_frame_section_tree")
    if not isinstance(tree, dict) or "cflow.srcaddr" in rec or "cflow.srcaddrv6" in rec:
        return
    rules["frame-record"] += 1
    e["bytes"] = num(rec.get("cflow.data_link_frame_size", "0"))
    e["packets"] = 1
    ip = next(((k, v) for k, v in tree.items() if k in ("ip", "ipv6") and isinstance(v, dict)), None)
    if ip is None:
        if "mpls" in tree or "pwethcw" in tree:
            rules["tshark-mpls-cw"] += 1
            for f in ("src", "dst", "ipver", "sport", "dport", "proto", "tos", "flags", "icmp_type", "icmp_code",
                      "vlan"):
                e.pop(f, None)
                e["_skip_" + f] = 1
        return
    k, v = ip
    names = list(tree)
    after = names[names.index(k) + 1:]
    if "vlan" in tree and "vlan" not in e:
        e["vlan"] = num(listify(tree["vlan"])[0]["vlan.id"]) & 0xfff
    if k == "ip":
        e["src"], e["dst"], e["proto"] = v["ip.src"], v["ip.dst"], num(v["ip.proto"])
        e["tos"] = num(v.get("ip.dsfield", "0"))
    else:
        e["src"], e["dst"] = v["ipv6.src"], v["ipv6.dst"]
        nxt = [x for kk, x in v.items() if re.match(r"ipv6\.\w+\.nxt$", kk)] or [v["ipv6.nxt"]]
        e["proto"] = num(nxt[-1])
        e["tos"] = num(v.get("ipv6.tclass", "0")) & 0xff
    e["ipver"] = 6 if k == "ipv6" else 4
    nxt_layer = tree[after[0]] if after else {}
    if e["proto"] in (6, 17) and after and after[0] in ("tcp", "udp"):
        e["sport"] = num(nxt_layer[after[0] + ".srcport"])
        e["dport"] = num(nxt_layer[after[0] + ".dstport"])
        if after[0] == "tcp":
            e["flags"] = num(nxt_layer.get("tcp.flags", "0")) & 0xff
    elif e["proto"] in (1, 58) and after and after[0] in ("icmp", "icmpv6"):
        t, c = num(nxt_layer[after[0] + ".type"]), num(nxt_layer[after[0] + ".code"])
        e["sport"], e["dport"] = 0, t << 8 | c


def counters(e, fwd, rev, rules):
    g = fwd.get
    for out, keys in (("bytes", ("cflow.octets", "cflow.octets64", "cflow.permanent_octets", "cflow.initiator_octets")),
                      ("packets", ("cflow.packets", "cflow.packets64", "cflow.permanent_packets",
                                   "cflow.initiator_packets"))):
        for i, k in enumerate(keys):
            if g(k) is not None:
                e[out] = num(g(k))
                if i >= 2:
                    rules["counters-alt"] += 1
                break
    for out, keys in (("out_bytes", ("cflow.post_octets", "cflow.post_total_octets", "rev:cflow.octets",
                                     "rev:cflow.permanent_octets", "cflow.responder_octets")),
                      ("out_packets", ("cflow.post_packets", "cflow.post_total_packets", "rev:cflow.packets",
                                       "rev:cflow.permanent_packets", "cflow.responder_packets"))):
        for i, k in enumerate(keys):
            v = rev.get(k[4:]) if k.startswith("rev:") else g(k)
            if v is not None:
                e[out] = num(v)
                if i >= 1:
                    rules["counters-alt"] += 1
                break


def icmp(e, fwd, rules):
    if e.get("proto") not in (1, 58):
        return
    g = fwd.get
    tc = g("cflow.icmp_type_code_ipv4") or g("cflow.icmp_type_code_ipv6")
    if tc is not None:
        t, c = num(tc) >> 8, num(tc) & 0xff
    elif any(g(k) is not None for k in ("cflow.icmp_ipv4_type", "cflow.icmp_ipv4_code", "cflow.icmp_ipv6_type",
                                        "cflow.icmp_ipv6_code")):
        t = num(g("cflow.icmp_ipv4_type") or g("cflow.icmp_ipv6_type") or "0")
        c = num(g("cflow.icmp_ipv4_code") or g("cflow.icmp_ipv6_code") or "0")
    else:
        dp = e.get("dport", 0)
        t, c = dp >> 8, dp & 0xff
    rules["icmp-ports"] += 1
    e["sport"], e["dport"], e["icmp_type"], e["icmp_code"] = 0, t << 8 | c, t, c


def times(e, hdr, fwd, ex, rules, fields):
    g = fwd.get
    first = last = None
    types = [t for t, _, _ in fields or []]
    if g("cflow.abstimestart", "").startswith("Jan  1, 1970 00:00:00.000000000") and g("cflow.timestart") is None \
            and 22 in types and not set(types) & {150, 152, 154, 156}:
        # tshark shows an uptime start (22) of 0 as the absolute time 0
        rules["tshark-zero-uptime-start"] += 1
        fwd = dict(fwd)
        del fwd["cflow.abstimestart"]
        fwd["cflow.timestart"] = "0.000"
        g = fwd.get
    if g("cflow.abstimestart") is not None:
        first = abs_ns(g("cflow.abstimestart"))
    if g("cflow.abstimeend") is not None:
        last = abs_ns(g("cflow.abstimeend"))
    fu = rel_ms(g("cflow.timestart")) if g("cflow.timestart") is not None else None
    lu = rel_ms(g("cflow.timeend")) if g("cflow.timeend") is not None else None
    if fu is not None or lu is not None:
        if hdr["version"] in (5, 9):
            boot = hdr["export_ns"] // 10**6 - hdr["uptime_ms"]
            wrap = 1 << 32 if fu is not None and lu is not None and fu > lu else 0
            if hdr["version"] == 5 and lu is not None and lu > hdr["uptime_ms"] and lu - hdr["uptime_ms"] > 100000:
                boot -= 1 << 32
            if first is None and fu is not None and boot + fu - wrap > 0:
                first = (boot + fu - wrap) * 10**6
            if last is None and lu is not None and boot + lu > 0:
                last = (boot + lu) * 10**6
            rules["uptime-times"] += 1
        elif g("cflow.sys_init_time") is not None or ex.sysinit_ms is not None:
            init = abs_ns(g("cflow.sys_init_time")) // 10**6 if g("cflow.sys_init_time") else ex.sysinit_ms
            if first is None and fu is not None:
                first = (init + fu) * 10**6
            if last is None and lu is not None:
                last = (init + lu) * 10**6
            rules["uptime-times"] += 1
        else:
            rules["uptime-no-init"] += 1  # IPFIX 21/22 without systemInitTimeMilliseconds: unusable
    if first is None and g("cflow.observation_time_milliseconds") is not None:
        first = abs_ns(g("cflow.observation_time_milliseconds"))
        rules["event-time"] += 1
    if first is None and last is None:
        rules["no-time"] += 1
        first = last = hdr["export_ns"]
    elif last is None:
        rules["no-end"] += 1
        last = first
    elif first is None:
        rules["no-start"] += 1
        first = last
    e["first_ns"], e["last_ns"] = first, last


def header(msg):
    v = int(msg["cflow.version"])
    h = {"version": v, "domain": 0, "uptime_ms": 0}
    ts = msg.get("cflow.timestamp_tree", {})
    if v == 5:
        h["export_ns"] = int(ts["cflow.unix_secs"]) * 10**9 + min(int(ts.get("cflow.unix_nsecs", "0")), 999999999)
        h["uptime_ms"] = rel_ms(msg["cflow.sysuptime"])
        h["engine"] = (num(msg.get("cflow.engine_type", "0")), num(msg.get("cflow.engine_id", "0")))
        h["sampling"] = num(msg.get("cflow.samplerate", "0"))
        h["sampling_mode"] = num(msg.get("cflow.samplingmode", "0"))
    elif v == 9:
        h["export_ns"] = int(ts["cflow.unix_secs"]) * 10**9
        h["uptime_ms"] = rel_ms(msg["cflow.sysuptime"])
        h["domain"] = num(msg.get("cflow.source_id", "0"))
    else:
        h["export_ns"] = int(ts["cflow.exporttime"]) * 10**9
        h["domain"] = num(msg.get("cflow.od_id", "0"))
    return h


def opt_sampler(h, r, ex):
    g = r.get
    has_id = g("cflow.sampler_id") is not None or g("cflow.selector_id") is not None
    has_space = g("cflow.sampler_random_interval") is not None or g("cflow.sampling_packet_space") is not None
    has_pkt = g("cflow.sampling_packet_interval") is not None
    has_smp = g("cflow.sampling_interval") is not None
    if not (has_id or has_space or has_pkt or has_smp):
        return
    generic = not (has_id or has_space or has_pkt)
    sid = 0 if generic else num(g("cflow.sampler_id") or g("cflow.selector_id") or "0")
    algo = num(g("cflow.sampling_algorithm") or g("cflow.sampler_mode") or g("cflow.selector_algorithm") or "0")
    space = num(g("cflow.sampling_packet_space") or g("cflow.sampler_random_interval") or "0") if has_space \
        else num(g("cflow.sampling_interval") or "0")
    pk = num(g("cflow.sampling_packet_interval") or "0")
    if has_pkt and pk:
        ex.samplers[(h["domain"], generic, sid)] = (pk, space, algo)
    else:
        ex.samplers[(h["domain"], generic, sid)] = (1, space - 1 if space else 0, algo)


def sampling(h, r, e, ex):
    """Expected sampling / sampling_algo and the counter scale of record r."""
    g = r.get
    e["_scale"] = 1
    if h["version"] == 5:
        e["sampling"], e["sampling_algo"] = 0, 0
        if h["sampling"]:
            e["sampling"], e["sampling_algo"] = h["sampling"], h["sampling_mode"]
            e["_scale"] = h["sampling"] if h["sampling"] > 1 else 1
            e["_rules"]["sampling-rate"] += 1
        return
    sid = g("cflow.sampler_id") or g("cflow.selector_id")
    m = ex.samplers.get((h["domain"], False, num(sid) if sid is not None else 0)) or \
        ex.samplers.get((h["domain"], True, 0))
    if m:
        pk, space, algo = m
        e["sampling"], e["sampling_algo"] = (pk + space) // pk, algo
        if space:
            e["_scale"] = (pk + space) // pk if (pk + space) % pk == 0 else (pk + space) / pk
        e["_rules"]["sampling-rate"] += 1
        return
    pk = num(g("cflow.sampling_packet_interval") or "0")
    sp = num(g("cflow.sampling_packet_space") or "0")
    if pk or sp:
        e["sampling"] = (max(pk, 1) + sp) // max(pk, 1)
    else:
        for k in ("cflow.sampler_random_interval", "cflow.sampling_interval"):
            if g(k) is not None:
                e["sampling"] = num(g(k))
    for k in ("cflow.sampling_algorithm", "cflow.sampler_mode", "cflow.selector_algorithm"):
        if g(k) is not None:
            e["sampling_algo"] = num(g(k))
    e.setdefault("sampling", 0)
    e.setdefault("sampling_algo", 0)


def unreadable(fset, fields, decoded, ex):
    """tshark threw on a field of a record (e.g. an IPv4 element sent in 2
    bytes) and decoded no more of the set: the records it holds by its
    length and the template's (fixed) record length, minus those shown."""
    lens = [n for _, _, n in fields or []]
    if not lens or 65535 in lens or not sum(lens):
        return
    ex.unreadable += (int(fset["cflow.flowset_length"]) - 4) // sum(lens) - decoded


def data_set(h, sid, fset, recs, ex, held=False):
    """The records of one data set (a template's or an options template's)."""
    kind, fields = ex.templates.get((h["version"], h["domain"], sid), ("data", None))
    if any("_ws.malformed" in r for r in recs):
        unreadable(fset, fields, len(recs), ex)
    for r in recs:
        r = flatten(r)
        if kind == "options":
            ex.options += 1
            if r.get("cflow.sys_init_time") is not None:
                ex.sysinit_ms = abs_ns(r["cflow.sys_init_time"]) // 10**6
            opt_sampler(h, r, ex)
            continue
        try:
            e = expect(h, r, fields, ex)
        except Ambiguous as err:
            ex.ambiguous.append(str(err))
            continue
        sampling(h, r, e, ex)
        if held:
            e["_rules"]["held-until-template"] += 1
        ex.flows.append(e)


def message(msg, ex, frame):
    h = header(msg)
    for k, fs in msg.items():
        if not isinstance(fs, (dict, list)) or not (k.startswith("FlowSet") or k.startswith("Set")
                                                     or k.startswith("pdu")):
            continue
        if k.startswith("pdu"):  # v5
            for r in listify(fs):
                e = expect(h, flatten(r), None, ex)
                e["engine_type"], e["engine_id"] = h["engine"]
                sampling(h, r, e, ex)
                ex.flows.append(e)
            continue
        for fset in listify(fs):
            sid = int(fset.get("cflow.flowset_id", "0"))
            for kk, vv in fset.items():
                if kk.startswith("Template (") or kk.startswith("Options Template ("):
                    for t in listify(vv):
                        kind = "options" if kk.startswith("Options") else "data"
                        ex.templates[(h["version"], h["domain"], int(t["cflow.template_id"]))] = (kind, tmpl_fields(t))
                elif kk.startswith("Data (") and "no template found" in kk:
                    ex.no_template += 1
                elif kk.startswith("Flow "):
                    tf = int(fset.get("cflow.template_frame", "0"))
                    if tf > frame:  # tshark -2 decoded it with a later template: bitarc holds it until then
                        ex.held.append((tf, h, sid, fset, listify(vv)))
                    else:
                        data_set(h, sid, fset, listify(vv), ex)


def records(data):
    out = collections.defaultdict(Exporter)
    for pkt in data:
        lay = pkt["_source"]["layers"]
        if "cflow" not in lay:
            continue
        ex = out[lay["ip"]["ip.src"]]
        frame = int(lay["frame"]["frame.number"])
        for msg in listify(lay["cflow"]):
            message(msg, ex, frame)
        for x in [x for x in ex.held if x[0] <= frame]:
            ex.held.remove(x)
            data_set(x[1], x[2], x[3], x[4], ex, held=True)
    return out
