"""ClickHouse as the column-store peer: Debian's clickhouse-server started as a
background process on 127.0.0.1 with its data under the bench work dir, one
MergeTree table per flow set ordered by start time (default LZ4, no skip
index), stopped at the end."""

import os
import shutil
import signal
import subprocess
import time

import socket

COLUMNS = ("first_ms UInt64, last_ms UInt64, src UInt32, dst UInt32, sport UInt16, dport UInt16, proto UInt8, "
           "flags UInt8, tos UInt8, packets UInt32, bytes UInt32, in_if UInt16, out_if UInt16, src_as UInt16, "
           "dst_as UInt16")

# records out: every column, times and addresses as text (what -o csv prints)
ROW_SELECT = ("toDateTime(intDiv(first_ms, 1000)) AS ts, first_ms % 1000 AS ts_ms, "
              "toDateTime(intDiv(last_ms, 1000)) AS te, (last_ms - first_ms) / 1000 AS td, "
              "IPv4NumToString(src) AS sa, IPv4NumToString(dst) AS da, sport, dport, proto, flags, tos, "
              "packets, bytes, in_if, out_if, src_as, dst_as")

CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/server.err.log</errorlog>
    <size>100M</size><count>1</count></logger>
  <tcp_port>{port}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <users_config>/etc/clickhouse-server/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709120</mark_cache_size>
  <timezone>UTC</timezone>
</yandex>
"""


def available():
    return bool(shutil.which("clickhouse-server") and shutil.which("clickhouse-client")
                and os.path.exists("/etc/clickhouse-server/users.xml"))


class ClickHouse:
    def __init__(self, work):
        self.dir = os.path.join(work, "clickhouse")
        self.proc = None

    def start(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        cfg = os.path.join(self.dir, "config.xml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(d=self.dir, port=self.port))
        self.proc = subprocess.Popen(["clickhouse-server", "--config-file=" + cfg],
                                     stdout=open(os.path.join(self.dir, "stdout.log"), "w"),
                                     stderr=subprocess.STDOUT)
        for _ in range(120):
            time.sleep(0.5)
            if self.proc.poll() is not None:
                raise RuntimeError("clickhouse-server exited at start (see %s/server.err.log)" % self.dir)
            if subprocess.run(self.client("SELECT 1"), capture_output=True).returncode == 0:
                self.version = self.query("SELECT version()").strip()
                return
        raise RuntimeError("clickhouse-server did not answer within 60 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def client(self, sql):
        return ["clickhouse-client", "--host", "127.0.0.1", "--port", str(self.port), "--query", sql]

    def query(self, sql):
        r = subprocess.run(self.client(sql), capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("clickhouse: %s: %s" % (sql[:200], r.stderr.strip()[:500]))
        return r.stdout

    def create(self, table):
        self.query("CREATE DATABASE IF NOT EXISTS qb")
        self.query("DROP TABLE IF EXISTS qb.%s" % table)
        self.query("CREATE TABLE qb.%s (%s) ENGINE = MergeTree() ORDER BY first_ms" % (table, COLUMNS))

    def load(self, table, stdin):
        """INSERT ... FORMAT TabSeparated from a file object or bytes."""
        cmd = self.client("INSERT INTO qb.%s FORMAT TabSeparated" % table)
        if isinstance(stdin, bytes):
            r = subprocess.run(cmd, input=stdin, capture_output=True)
        else:
            r = subprocess.run(cmd, stdin=stdin, capture_output=True)
        if r.returncode != 0:
            raise RuntimeError("clickhouse load of %s: %s" % (table, r.stderr.decode()[:500]))
        # merge the insert blocks as the background merges eventually would
        self.query("OPTIMIZE TABLE qb.%s FINAL" % table)
        return int(self.query("SELECT count() FROM qb.%s" % table))

    def sizes(self, table):
        """Compressed bytes: total on disk (active parts), data, and per column."""
        row = self.query("SELECT sum(bytes_on_disk), sum(data_compressed_bytes), sum(data_uncompressed_bytes) "
                         "FROM system.parts WHERE database = 'qb' AND table = '%s' AND active" % table).split()
        cols = {}
        for line in self.query("SELECT name, data_compressed_bytes FROM system.columns "
                               "WHERE database = 'qb' AND table = '%s'" % table).splitlines():
            name, b = line.split("\t")
            cols[name] = int(b)
        return {"on_disk": int(row[0]), "compressed": int(row[1]), "uncompressed": int(row[2]), "columns": cols}

    # the three query modes, FORMAT CSV as a user would take them out
    def sql_count(self, table, where):
        return "SELECT count() FROM qb.%s WHERE %s" % (table, where)

    def sql_rows(self, table, where):
        return "SELECT %s FROM qb.%s WHERE %s FORMAT CSV" % (ROW_SELECT, table, where)

    def sql_top(self, table, where, n):
        return ("SELECT IPv4NumToString(src) AS ip, count() AS fl, sum(packets) AS pkt, sum(bytes) AS byt "
                "FROM qb.%s WHERE %s GROUP BY src ORDER BY byt DESC LIMIT %d FORMAT CSV" % (table, where, n))
