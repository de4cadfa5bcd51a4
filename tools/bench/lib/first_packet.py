"""Time from a sender's start to its first RTP audio packet, for tools/bench/raop-send.
Both halves run in the benchmark's network namespace and read CLOCK_MONOTONIC
(time.monotonic()), which network namespaces do not change.

    python3 first_packet.py sniff OUT [TIMEOUT_S]
        Captures on "lo" (AF_PACKET, every protocol). Prints "ready" once the socket is bound,
        then writes to OUT the monotonic time at which the first UDP datagram carrying an RTP
        audio packet was read (version 2: byte 0 & 0xC0 == 0x80; payload type 96: byte 1 &
        0x7F == 0x60), and its UDP destination port. Exits 1 if none came within TIMEOUT_S
        (default 60).
    python3 first_packet.py launch OUT CMD [ARG...]
        Writes the monotonic time to OUT, then execs CMD (same process, so nothing runs in
        between but the exec).

On loopback every packet is captured twice (leaving and arriving); the first copy counts.
The sender's other UDP packets (RAOP timing 0xD2/0xD3, sync 0xD4, resend 0xD5/0xD6) have
other payload types, and RTSP runs over TCP.
"""
import os
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
ETH_HEADER = 14


def audio_port(frame):
    """The UDP destination port if the frame is IPv4 UDP carrying RTP audio, else None."""
    if len(frame) < ETH_HEADER + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[ETH_HEADER:]
    if ip[0] >> 4 != 4 or ip[9] != 17:
        return None
    header = (ip[0] & 0x0F) * 4
    udp = ip[header:]
    if len(udp) < 8 + 12:
        return None
    payload = udp[8:]
    if payload[0] & 0xC0 == 0x80 and payload[1] & 0x7F == 0x60:
        return struct.unpack("!H", udp[2:4])[0]
    return None


def sniff(out, timeout):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind(("lo", 0))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    print("ready", flush=True)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return 1
        if not select.select([sock], [], [], left)[0]:
            continue
        frame = sock.recv(65535)
        seen = time.monotonic()
        port = audio_port(frame)
        if port is not None:
            with open(out, "w") as f:
                f.write(f"{seen:.6f} {port}\n")
            return 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "sniff":
        sys.exit(sniff(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 60))
    if len(sys.argv) >= 4 and sys.argv[1] == "launch":
        with open(sys.argv[2], "w") as f:
            f.write(f"{time.monotonic():.6f}\n")
        os.execvp(sys.argv[3], sys.argv[3:])
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
