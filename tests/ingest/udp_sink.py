"""udp_sink.py OUT [IDLE]: prints the 127.0.0.1 UDP port it listens on, then
writes each datagram received to OUT as a 2-byte big-endian length and the
datagram, until none came for IDLE seconds (default 2)."""
import socket
import sys

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(('127.0.0.1', 0))
print(s.getsockname()[1], flush=True)
s.settimeout(float(sys.argv[2]) if len(sys.argv) > 2 else 2.0)
out = open(sys.argv[1], 'wb')
n = 0
while True:
    try:
        d = s.recv(65535)
    except socket.timeout:
        break
    out.write(len(d).to_bytes(2, 'big') + d)
    n += 1
sys.stderr.write("got %d datagrams\n" % n)
