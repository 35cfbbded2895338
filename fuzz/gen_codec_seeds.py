#!/usr/bin/env python3
"""Writes the seed corpora of the codec fuzz targets (fuzz/codec.cmake) from real
encodings made by the built CLI: fuzz/gen_codec_seeds.py path/to/bitarc

codec_<name>/: [u32 LE nrows][u8 seed][words LE]; bitmap_deserialize/: the
serialized record [u8 codec][u8 0][u16 0][u64 nrows][u64 nwords][words LE]."""
import os, random, struct, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
bitarc = sys.argv[1]
codecs = {"wah32": 1, "wah64": 2, "plwah": 3, "compax": 4, "masc": 5, "masc-qt": 6}

def groups(*gs):
    return "".join(format(int(g, 16), "031b") for g in gs)

rng = random.Random(20261122)
def rand_bits(n, p):
    return "".join("1" if rng.random() < p else "0" for _ in range(n))
def runs(n, p):
    out, v = [], 0
    for _ in range(n):
        if rng.random() < p: v ^= 1
        out.append(str(v))
    return "".join(out)
def rows(n, ids):
    b = ["0"] * n
    for i in ids: b[i] = "1"
    return "".join(b)

inputs = {
    "fig5": groups("00000000", "0003FFFF", "7FFFF000", "00000000", "00000000", "0003C000", "00000000"),
    "ascr": "1001000111010000010110000010011" + "0" * 62 + "1" * 93 + "000100100001111111111110",
    "va": rows(3100, [5, 100, 3000]),
    "vb": "1" * 40 + "0" + "1" * 21,
    "vc": rows(155, [2, 5, 154]),
    "vd": rows(186, [62 + 7 + i for i in (0, 2, 5, 7)]),
    "masc4": "0" * 449 + "1" * 18,
    "ones": "1" * 500,
    "dense": rand_bits(700, 0.5),
    "sparse": rand_bits(5000, 0.003),
    "runs": runs(3000, 0.02),
    "carrier": "0" * 40 + "1" * 5 + "0" * 200 + "1" * 30 + "0" * 31 + "1" * 31,
}

def encode(codec, bits):
    out = subprocess.run([bitarc, "bitmap", "encode", "--codec", codec], input=bits.encode(),
                         capture_output=True, check=True).stdout.decode().split()
    return [int(w, 16) for w in out]

for codec, cid in codecs.items():
    wb = 8 if codec == "wah64" else 4
    fmt = "<Q" if wb == 8 else "<I"
    d = os.path.join(here, "corpus", "codec_" + codec.replace("-", "_"))
    os.makedirs(d, exist_ok=True)
    ds = os.path.join(here, "corpus", "bitmap_deserialize")
    os.makedirs(ds, exist_ok=True)
    for i, (name, bits) in enumerate(sorted(inputs.items())):
        try:
            words = encode(codec, bits)
        except subprocess.CalledProcessError:
            print("skipped", codec, "(not in this build)", file=sys.stderr)
            break
        payload = b"".join(struct.pack(fmt, w) for w in words)
        with open(os.path.join(d, name), "wb") as f:
            f.write(struct.pack("<IB", len(bits), (i * 37) & 255) + payload)
        if name in ("fig5", "va", "runs", "ascr"):
            rec = struct.pack("<BBHQQ", cid, 0, 0, len(bits), len(words)) + payload
            with open(os.path.join(ds, codec.replace("-", "_") + "_" + name), "wb") as f:
                f.write(rec)
