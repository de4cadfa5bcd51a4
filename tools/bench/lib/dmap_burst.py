#!/usr/bin/env python3
"""A bare RAOP sender for the now-playing benchmark: sets a session up (ANNOUNCE an ALAC
stream, SETUP, RECORD; no audio), then sends COUNT metadata updates (SET_PARAMETER with a DMAP
item whose title is "PREFIX N") INTERVAL seconds apart, recording when each left, and tears
the session down. Prints {"sent": {title: epoch seconds}} as JSON.

usage: dmap_burst.py HOST PORT PREFIX COUNT INTERVAL
"""
import json
import socket
import struct
import sys
import time


def field(tag, value):
    return tag.encode() + struct.pack(">I", len(value)) + value


class RTSP:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.cseq = 0
        self.session = None
        self.uri = f"rtsp://{host}/4242"

    def request(self, method, headers=None, body=b""):
        self.cseq += 1
        lines = [f"{method} {self.uri} RTSP/1.0", f"CSeq: {self.cseq}", "User-Agent: now-playing-bench/1.0",
                 "DACP-ID: 0123456789ABCDEF", "Active-Remote: 424242", "Client-Instance: 0123456789ABCDEF"]
        if self.session:
            lines.append(f"Session: {self.session}")
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        lines.append(f"Content-Length: {len(body)}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise RuntimeError(f"{method}: connection closed")
            head += chunk
        text = head.decode("latin-1")
        length = 0
        for line in text.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
            if name.strip().lower() == "session":
                self.session = value.strip().split(";")[0]
        while length > 0:
            length -= len(self.sock.recv(length))
        status = int(text.split(" ")[1])
        if status != 200:
            raise RuntimeError(f"{method}: {text.splitlines()[0]}")


def main():
    host, port, prefix, count, interval = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    # Control and timing ports that exist (their traffic is not answered: no audio is sent).
    control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    control.bind(("127.0.0.1", 0))
    timing = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    timing.bind(("127.0.0.1", 0))
    rtsp = RTSP(host, port)
    sdp = ("v=0\r\no=iTunes 4242 0 IN IP4 127.0.0.1\r\ns=iTunes\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
           "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 AppleLossless\r\na=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100\r\n")
    rtsp.request("ANNOUNCE", {"Content-Type": "application/sdp"}, sdp.encode())
    rtsp.request("SETUP", {"Transport": "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;"
                                        f"control_port={control.getsockname()[1]};timing_port={timing.getsockname()[1]}"})
    rtsp.request("RECORD", {"Range": "npt=0-", "RTP-Info": "seq=1;rtptime=1000"})
    sent = {}
    for index in range(count):
        title = f"{prefix} {index}"
        body = field("mlit", field("minm", title.encode()) + field("asar", b"Bench Artist") + field("asal", b"Bench Album"))
        sent[title] = time.time()
        rtsp.request("SET_PARAMETER", {"Content-Type": "application/x-dmap-tagged", "RTP-Info": "rtptime=1000"}, body)
        time.sleep(interval)
    time.sleep(1)
    rtsp.request("TEARDOWN")
    print(json.dumps({"sent": sent}))


main()
