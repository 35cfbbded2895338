"""`cmake --install` puts the Python package where Debian's python3 finds it
(PREFIX/lib/python3.X/dist-packages) and records the installed
libbitarc.so.0 in bitarc/_config.py: an interpreter with neither
BITARC_LIBRARY nor the source tree on its path loads the installed library,
compiles a filter and reads a store."""

import glob
import os
import subprocess
import sys
import tempfile
import unittest

import flowgen
import support


class Install(unittest.TestCase):
    def test_installed_package_finds_its_library(self):
        with tempfile.TemporaryDirectory() as tmp:
            prefix = os.path.join(tmp, "prefix")
            subprocess.run([os.environ["CMAKE_COMMAND"], "--install", os.environ["BA_BINARY_DIR"], "--prefix", prefix],
                           check=True, stdout=subprocess.DEVNULL)
            sites = glob.glob(os.path.join(prefix, "lib", "python3*", "dist-packages"))
            self.assertEqual(len(sites), 1, sites)
            self.assertTrue(os.path.exists(os.path.join(sites[0], "bitarc", "dask", "worker.py")))
            pcap, store = os.path.join(tmp, "f.pcap"), os.path.join(tmp, "st")
            flowgen.write_ipfix_pcap(pcap, flowgen.generated(500, 7, support.BASE_S, 2))
            support.ingest(store, pcap)
            env = {k: v for k, v in os.environ.items() if k not in ("BITARC_LIBRARY", "PYTHONPATH")}
            env["PYTHONPATH"] = sites[0]
            code = ("import bitarc, bitarc.dask, sys\n"
                    "print(bitarc._ffi.library_path())\n"
                    "print(bitarc.Store(sys.argv[1]).count('any').count)\n")
            p = subprocess.run([sys.executable, "-c", code, store], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=tmp)
            self.assertEqual(p.returncode, 0, p.stderr.decode())
            lib, n = p.stdout.decode().split()
            self.assertTrue(lib.startswith(prefix) and os.path.exists(lib), lib)
            self.assertEqual(int(n), 500)


if __name__ == "__main__":
    sys.exit(unittest.main())
