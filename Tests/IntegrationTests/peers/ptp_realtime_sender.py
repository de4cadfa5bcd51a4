#!/usr/bin/env python3
"""An AirPlay 2 sender that streams realtime audio (type 96) in a PTP session, timed only by
0xD7 anchors, as OwnTone and Music Assistant do; for tests of a receiver's realtime PTP timing.

Usage: ptp_realtime_sender.py RECEIVER PORT DEVICE_ID TXT OUR_ADDRESS CLOCK_ID FILE FIFO
pyatv 0.18 (PyPI) does the AirPlay 2 work it knows (transient pairing, the encrypted control
connection, plist SETUPs, the event channel, ChaCha20-Poly1305 audio packets, paced in real
time). Two of its steps are replaced here: SETUP phase 1 names PTP as the timing protocol with
OUR_ADDRESS as the timing peer, and its 0xD4 syncs give way to 28-byte 0xD7 anchors on the PTP
clock that `airplay ptp-master` serves from this host (CLOCK_REALTIME, grandmaster CLOCK_ID as
it prints it, aabbcc.fffe.ddeeff-1).

The promise: the first frame sent is heard 1.5 s after it left (what pyatv pads its end with), and every frame after it on
that line. One anchor goes with the first packet, then one a second: frame1 = the frame heard
at the anchor's time + 11035 (as shairport-sync 5 reads it), frame2 = frame1 + 77175.

It reads the receiver's raw S16LE output from FIFO while it streams, then prints "OK {json}":
the share of the file's frames played bit-exact, and when they were heard against the promise
(the median per second, ms), or "FAIL reason".
"""
import asyncio, json, os, socket, struct, sys, threading, time, wave
from ipaddress import ip_address

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fifo_read  # noqa: E402

import pyatv  # noqa: E402
from pyatv.conf import AppleTV, ManualService  # noqa: E402
from pyatv.const import Protocol  # noqa: E402
from pyatv.protocols.raop import stream_client  # noqa: E402
from pyatv.storage.memory_storage import MemoryStorage  # noqa: E402
from pyatv.support import rtsp  # noqa: E402

RATE = 44100
LATENCY = 1.5        # from a frame leaving to its being heard: pyatv pads this much before its TEARDOWN
HEARD_BEFORE = 11035  # frame1 - HEARD_BEFORE is heard at the anchor's time
NEXT_OFFSET = 77175   # frame2 = frame1 + NEXT_OFFSET


def fail(reason):
    print("FAIL " + reason)
    sys.exit(1)


def main():
    receiver, port, device_id, txt, our_address, clock_text, path, fifo = sys.argv[1:9]
    clock_id = int(clock_text.split("-")[0].replace(".", ""), 16)
    properties = dict(item.split("=", 1) for item in txt.split("|") if "=" in item)
    with wave.open(path) as source:
        samples = source.readframes(source.getnframes())
    frames = len(samples) // 4

    # SETUP phase 1: PTP, with this host as the timing peer.
    plain_setup = rtsp.RtspSession.setup

    async def ptp_setup(self, headers=None, body=None):
        if isinstance(body, dict) and "timingProtocol" in body:
            body = dict(body, timingProtocol="PTP", timingPeerInfo={"Addresses": [our_address], "ID": our_address},
                        timingPeerList=[{"Addresses": [our_address], "ID": our_address}])
            body.pop("timingPort", None)
        return await plain_setup(self, headers=headers, body=body)

    rtsp.RtspSession.setup = ptp_setup

    # The stream's start: its first frame's RTP time and the realtime it left at.
    start = {}
    plain_stream = stream_client.StreamClient._stream_data

    async def marked_stream(self, source, transport):
        start.update(rtp=self.context.rtptime, ns=time.time_ns(), mono=time.monotonic())
        return await plain_stream(self, source, transport)

    stream_client.StreamClient._stream_data = marked_stream

    # 0xD7 anchors instead of 0xD4 syncs, from the first packet on, one a second.
    async def anchors(self, destination):
        while "rtp" not in start:
            await asyncio.sleep(0.001)
        first = True
        while self.transport is not None:
            elapsed = max(0, time.time_ns() - start["ns"])
            heard = (start["rtp"] + elapsed * RATE // 1_000_000_000) & 0xFFFFFFFF
            at = start["ns"] + int(LATENCY * 1e9) + elapsed
            frame1 = (heard + HEARD_BEFORE) & 0xFFFFFFFF
            packet = struct.pack(">BBHIQIQ", 0x90 if first else 0x80, 0xD7, 6, frame1, at, (frame1 + NEXT_OFFSET) & 0xFFFFFFFF,
                                 clock_id)
            self.transport.sendto(packet, destination)
            first = False
            await asyncio.sleep(1.0)

    stream_client.ControlClient._sync_task = anchors

    output = {}
    reader = threading.Thread(target=lambda: output.update(zip(("chunks", "data"), fifo_read.read_fifos([fifo], frames / RATE + 25))),
                              daemon=True)
    reader.start()

    async def stream():
        config = AppleTV(ip_address(receiver), "receiver")
        config.add_service(ManualService(device_id, Protocol.RAOP, int(port), properties))
        atv = await pyatv.connect(config, asyncio.get_running_loop(), protocol=Protocol.RAOP, storage=MemoryStorage())
        try:
            await asyncio.wait_for(atv.stream.stream_file(path), frames / RATE + 30)
        finally:
            atv.close()

    asyncio.run(stream())
    reader.join(timeout=frames / RATE + 30)
    if "data" not in output or "rtp" not in start:
        fail("nothing was streamed, or the output FIFO was never read to its end")
    chunks, data = output["chunks"][0], bytes(output["data"][0])
    probe = samples[4 * RATE:4 * RATE + 64]   # 1 s in: the receiver may lead with what it had
    at = data.find(probe)
    while at >= 0 and at % 4:
        at = data.find(probe, at + 1)
    if at < 0:
        fail(f"the file is not in the output ({len(data) // 4} frames written)")
    base = at // 4 - RATE
    exact = sum(1 for f in range(frames) if 0 <= base + f and data[4 * (base + f):4 * (base + f) + 4] == samples[4 * f:4 * f + 4]) / frames
    realtime_minus_monotonic = start["ns"] / 1e9 - start["mono"]

    promise = start["ns"] / 1e9 - realtime_minus_monotonic + LATENCY
    errors = fifo_read.errors_against_promise(chunks, base, frames, promise)
    print("OK " + json.dumps({"frames": frames, "exact": round(exact, 5), "start_error_ms": errors[0] if errors else None,
                              "errors_ms": errors}))


if __name__ == "__main__":
    main()
