"""Sends N malformed requests to a control port, as a hostile client would: garbage, bad
methods and versions, oversized heads and bodies, bad Content-Length, bad RTSP sessions,
truncated requests on connections closed mid-way. Mixed over new and kept-alive connections.

    python3 malformed_flood.py HOST PORT N
"""
import random
import socket
import sys

host, port, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)

def garbage():
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))) + b"\r\n\r\n"

KINDS = [
    lambda: b"THIS IS NOT HTTP\r\n\r\n",
    lambda: b"GET /info HTTP/9.9\r\n\r\n",
    lambda: b"FLY /x RTSP/1.0\r\nCSeq: 1\r\n\r\n",
    lambda: b"GET /info HTTP/1.1\r\nX-Filler: " + b"y" * 20000 + b"\r\n\r\n",
    lambda: b"POST /play HTTP/1.1\r\nContent-Length: 1100000\r\n\r\n" + b"x" * 1100000,
    lambda: b"POST /play HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
    lambda: b"POST /play HTTP/1.1\r\nContent-Length: 10\r\n\r\n{not a plist",
    lambda: b"SETUP rtsp://x/1 RTSP/1.0\r\nCSeq: 2\r\nTransport: garbage\r\n\r\n",
    lambda: b"ANNOUNCE rtsp://x/1 RTSP/1.0\r\nCSeq: 3\r\nContent-Type: application/sdp\r\nContent-Length: 19\r\n\r\nv=0\r\nm=nonsense\r\n\r\n",
    lambda: b"SET_PARAMETER rtsp://x/1 RTSP/1.0\r\nCSeq: 4\r\nContent-Type: text/parameters\r\nContent-Length: 12\r\n\r\nvolume: abc\r\n",
    lambda: b"GET /" + b"a" * 3000 + b" HTTP/1.1\r\n\r\n",
    lambda: b"GET /info HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(100)) + b"\r\n",
    garbage,
]

sent = 0
unanswered = 0
connection = None
while sent < total:
    if connection is None or rng.random() < 0.3:
        if connection is not None:
            connection.close()
        connection = socket.create_connection((host, port), timeout=10)
    request = rng.choice(KINDS)()
    try:
        if rng.random() < 0.05:
            # Half a request, then the connection goes.
            connection.sendall(request[: len(request) // 2])
            connection.close()
            connection = None
        else:
            connection.sendall(request)
            connection.settimeout(2)
            connection.recv(65536)
    except OSError:
        unanswered += 1
        connection = None
    sent += 1
if connection is not None:
    connection.close()
print(f"sent {sent} malformed requests ({unanswered} left unanswered within 2 s)", file=sys.stderr)
