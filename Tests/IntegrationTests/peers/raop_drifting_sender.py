#!/usr/bin/env python3
"""A RAOP sender whose clock runs fast or slow, for tests of a receiver's clock following.

Usage: raop_drifting_sender.py HOST PORT PPM SECONDS [SYNC_OFFSET]
Its clock (what its timing answers and sync packets say) runs PPM parts per million faster than
the machine's, and it paces its L16 packets by that clock, as a sender with its own crystal
would. A receiver that plays by its own clock must drop (PPM > 0) or add frames to keep up.
Streams SECONDS of a 441 Hz / 662 Hz sine pair (unencrypted L16, 352-frame packets, latency
2 s as iTunes announces it), answers timing requests (0x52 -> 0x53) and resend requests from
a backlog, then TEARDOWN. Prints "OK {json}" or "FAIL reason".
With SYNC_OFFSET (seconds), every sync packet claims its time that far off the
clock its timing answers give, alternately ahead and behind: a sender whose syncs contradict
its own clock, which a receiver must not follow.
"""
import json, math, os, socket, struct, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raop_encrypted_sender import fail, request, start_session  # noqa: E402

FRAMES = 352
LATENCY = 88200
NTP_EPOCH = 2208988800


def main():
    host, port, ppm, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    sync_offset = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    syncs = 0
    rate = 1 + ppm * 1e-6
    base_mono, base_wall = time.monotonic(), time.time() + NTP_EPOCH

    def clock():
        """The sender's clock in seconds since 1900: the machine's, running `rate` times as fast."""
        return base_wall + (time.monotonic() - base_mono) * rate

    def ntp(value):
        return struct.pack(">II", int(value), int((value % 1) * 2**32))

    sock = socket.create_connection((host, port), timeout=10)
    sdp = ("v=0\r\no=iTunes 1 0 IN IP4 127.0.0.1\r\ns=iTunes\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
           "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 L16/44100/2\r\n")
    server_port, control, sync_port = start_session(sock, sdp, 1, with_control_port=True)
    backlog, stop = {}, threading.Event()
    answered = {"timing": 0, "resent": 0}
    first_request = []   # when the receiver's first timing request came, on our clock
    early_requests = [0]   # timing requests within a second of the first (the start's burst)

    def serve():
        control.settimeout(0.1)
        while not stop.is_set():
            try:
                data, source = control.recvfrom(2048)
            except socket.timeout:
                continue
            if len(data) >= 32 and data[1] & 0x7F == 0x52:
                received = clock()
                first_request[:1] = first_request[:1] or [received]
                if received - first_request[0] < 1.0:
                    early_requests[0] += 1
                control.sendto(bytes([0x80, 0xD3, 0, 7, 0, 0, 0, 0]) + data[24:32] + ntp(received) + ntp(clock()), source)
                answered["timing"] += 1
            elif len(data) >= 8 and data[1] & 0x7F == 0x55:
                first, count = struct.unpack(">HH", data[4:8])
                for seq in range(first, first + min(count, 512)):
                    if seq & 0xFFFF in backlog:
                        control.sendto(bytes([0x80, 0xD6, 0, 1]) + backlog[seq & 0xFFFF], source)
                        answered["resent"] += 1

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    audio = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    packets = int(seconds * 44100 / FRAMES)
    start = clock()
    last_sync = -1.0
    for n in range(packets):
        timestamp = n * FRAMES
        payload = b"".join(struct.pack(">hh", int(12000 * math.sin(2 * math.pi * 441 * i / 44100)),
                                       int(9000 * math.sin(2 * math.pi * 662 * i / 44100)))
                           for i in range(timestamp, timestamp + FRAMES))
        packet = struct.pack(">BBHII", 0x80, 0xE0 if n == 0 else 0x60, n & 0xFFFF, timestamp, 0) + payload
        backlog[n & 0xFFFF] = packet
        backlog.pop((n - 1000) & 0xFFFF, None)
        now = clock()
        if now - last_sync >= 1:
            last_sync = now
            sync = struct.pack(">BBH", 0x90 if n == 0 else 0x80, 0xD4, 7) + struct.pack(">I", (timestamp - LATENCY) & 0xFFFFFFFF)
            claimed = now + (sync_offset if syncs % 2 == 0 else -sync_offset)
            syncs += 1
            sync += ntp(claimed) + struct.pack(">I", timestamp)
            control.sendto(sync, (host, sync_port))
        audio.sendto(packet, (host, server_port))
        # Paced by our own clock: packet n leaves at start + n * 352 / 44100 of it.
        wait = (start + (n + 1) * FRAMES / 44100 - clock()) / rate
        if wait > 0:
            time.sleep(wait)
    time.sleep(2.5)  # the receiver plays the last packets one latency later
    stop.set()
    request(sock, "TEARDOWN", 10)
    print("OK " + json.dumps({"packets": packets, "timing_answers": answered["timing"],
                            "timing_requests_first_second": early_requests[0], "resent": answered["resent"]}))


if __name__ == "__main__":
    main()
