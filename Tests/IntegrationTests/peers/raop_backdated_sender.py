#!/usr/bin/env python3
"""A RAOP sender that starts the way libraop (Music Assistant's sender) does, for tests of the
receiver's timing conventions.

Usage: raop_backdated_sender.py HOST PORT FIFO SECONDS [LATENCY [START_IN]]
Its first frame is to be heard START_IN seconds (default 0.25) after it has set the stream up;
its latency (default 2.55 s) plus the 0.25 s flags 7 add is how long before being heard each
frame is due to leave. So frame k is due to leave at t0 + START_IN - LATENCY - 0.25 + k / 44100:
with START_IN under that total (libraop's back-dated start) the frames already due go out at
once, as a burst, then the rest in real time; with START_IN over it (Music Assistant's start
time, seconds ahead) nothing goes out until the first frame is due. Its sync packets, one at the
start and one a second after that, carry flags 7 and are stamped with the time its *next* frame
is due to leave: behind real time during a burst, ahead of it before a start ahead. Each names
"next minus latency", which flags 7 put 11025 frames after the stamp, so every sync promises
frame k at t0 + START_IN + k / 44100, and the receiver must play it then: nothing cut, nothing
stalled. Answers timing requests (0x52 -> 0x53) and resend requests from a backlog.

It reads the receiver's raw S16LE output from FIFO while it streams (a raw output writes frames
when they are due), then prints "OK {json}": the share of frames bit-exact (exact), the share
found whole and in order when a drift correction may have added or removed a frame (in_order),
and when the frames
were heard against the promise (the median per second, ms: start_error_ms for the first
second, errors_ms for each), or "FAIL reason".
"""
import json, os, random, socket, struct, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fifo_read  # noqa: E402
from raop_encrypted_sender import fail, request, start_session  # noqa: E402

FRAMES = 352
RATE = 44100
NTP_EPOCH = 2208988800
FLAGS_7_DELAY = 11025 / RATE  # flags 7: a sync's frame is heard 11025 frames after its time
FIRST = 704 * 1000          # the first RTP time: the start of a packet pair (see the playout's write-ahead)


def signal(frames):
    """Interleaved stereo samples no frame of which is silent, the same every run."""
    rng = random.Random(1234)
    return [rng.randint(-20000, 20000) or 1 for _ in range(2 * frames)]


def whole_frames_in_order(received, samples, start):
    """The share of the stream's frames found whole in the output (samples from `start`), in
    order, where a drift correction may have added or removed a frame here and there. After a
    frame that differs, the stream is found again by its next 20 frames within 64 frames either
    way, on frame boundaries only: a sample shifted or channels swapped find nothing again."""
    frames, position, found, f, misses = len(samples) // 2, start, 0, 0, 0
    while f < frames and position + 2 <= len(received):
        if received[position:position + 2] == tuple(samples[2 * f:2 * f + 2]):
            found, f, position, misses = found + 1, f + 1, position + 2, 0
            continue
        run = tuple(samples[2 * f:2 * min(frames, f + 20)])
        # Past a packet's worth of misses, look again only now and then (a shifted output
        # would otherwise be searched at every frame).
        search = misses < 64 or misses % 64 == 0
        again = next((p for p in range(max(start, position - 128), position + 130, 2) if received[p:p + len(run)] == run), None) if search else None
        if again is None:
            f, position, misses = f + 1, position + 2, misses + 1   # lost (silence) or corrected away: step over it
        else:
            position = again
    return found / max(1, frames)


def main():
    host, port, fifo, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    latency = float(sys.argv[5]) if len(sys.argv) > 5 else 2.55
    start_in = float(sys.argv[6]) if len(sys.argv) > 6 else FLAGS_7_DELAY
    latency_frames = int(latency * RATE)
    samples = signal(int(seconds * RATE) // FRAMES * FRAMES)
    packets = len(samples) // 2 // FRAMES

    output = {}
    reader = threading.Thread(target=lambda: output.update(zip(("chunks", "data"), fifo_read.read_fifos([fifo], seconds + start_in + 20))),
                              daemon=True)
    reader.start()

    sock = socket.create_connection((host, port), timeout=10)
    sdp = ("v=0\r\no=iTunes 1 0 IN IP4 127.0.0.1\r\ns=iTunes\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
           "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 L16/44100/2\r\n")
    server_port, control, sync_port = start_session(sock, sdp, 1, with_control_port=True)
    t0, wall0 = time.monotonic(), time.time() + NTP_EPOCH

    def clock(mono):
        """The sender's clock (NTP seconds) at monotonic time `mono`."""
        return wall0 + (mono - t0)

    def ntp(value):
        return struct.pack(">II", int(value), int((value % 1) * 2**32))

    backlog, stop = {}, threading.Event()
    answered = {"timing": 0, "resent": 0}

    def serve():
        control.settimeout(0.1)
        while not stop.is_set():
            try:
                data, source = control.recvfrom(2048)
            except socket.timeout:
                continue
            if len(data) >= 32 and data[1] & 0x7F == 0x52:
                received = clock(time.monotonic())
                control.sendto(bytes([0x80, 0xD3, 0, 7, 0, 0, 0, 0]) + data[24:32] + ntp(received) + ntp(clock(time.monotonic())), source)
                answered["timing"] += 1
            elif len(data) >= 8 and data[1] & 0x7F == 0x55:
                first, count = struct.unpack(">HH", data[4:8])
                for seq in range(first, first + min(count, 512)):
                    if seq & 0xFFFF in backlog:
                        control.sendto(bytes([0x80, 0xD6, 0, 1]) + backlog[seq & 0xFFFF], source)
                        answered["resent"] += 1

    threading.Thread(target=serve, daemon=True).start()
    audio = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    start = t0 + start_in - latency - FLAGS_7_DELAY   # when frame 0 is due to leave

    def send_sync(n):
        """A sync naming the next frame to leave (packet n's first), stamped with its time to leave."""
        head = n * FRAMES
        nxt = (FIRST + head) & 0xFFFFFFFF
        sync = struct.pack(">BBH", 0x90 if n == 0 and not answered.get("synced") else 0x80, 0xD4, 7)
        sync += struct.pack(">I", (nxt - latency_frames) & 0xFFFFFFFF) + ntp(clock(start + head / RATE)) + struct.pack(">I", nxt)
        control.sendto(sync, (host, sync_port))
        answered["synced"] = True

    send_sync(0)
    last_sync, n = time.monotonic(), 0
    while n < packets:
        now = time.monotonic()
        if now - last_sync >= 1:
            send_sync(n)
            last_sync = now
        leaves = start + n * FRAMES / RATE
        if leaves > now:
            time.sleep(min(leaves - now, last_sync + 1 - now))
            continue
        k = n * FRAMES
        payload = struct.pack(f">{2 * FRAMES}h", *samples[2 * k:2 * (k + FRAMES)])
        packet = struct.pack(">BBHII", 0x80, 0xE0 if n == 0 else 0x60, n & 0xFFFF, (FIRST + k) & 0xFFFFFFFF, 0) + payload
        backlog[n & 0xFFFF] = packet
        backlog.pop((n - 1000) & 0xFFFF, None)
        audio.sendto(packet, (host, server_port))
        n += 1
    # The last frame is heard when promised.
    time.sleep(max(0, t0 + start_in + packets * FRAMES / RATE - time.monotonic()) + 0.5)
    stop.set()
    request(sock, "TEARDOWN", 10)
    sock.close()
    reader.join(timeout=30)
    if "data" not in output:
        fail("the output FIFO was never read to its end")
    chunks, data = output["chunks"][0], bytes(output["data"][0])
    received = struct.unpack(f"<{len(data) // 2}h", data[:len(data) // 2 * 2])
    probe = tuple(samples[:40])
    start = next((i for i in range(0, len(received) - 40, 2) if received[i:i + 40] == probe), None)
    if start is None:
        fail(f"the first frames are not in the output ({len(received) // 2} frames written)")
    exact = sum(1 for f in range(len(samples) // 2)
                if received[start + 2 * f:start + 2 * f + 2] == tuple(samples[2 * f:2 * f + 2])) / (len(samples) // 2)
    in_order = whole_frames_in_order(received, samples, start)
    base = start // 2

    errors = fifo_read.errors_against_promise(chunks, base, len(samples) // 2, t0 + start_in)
    print("OK " + json.dumps({"packets": packets, "exact": round(exact, 5), "in_order": round(in_order, 5), "start_error_ms": errors[0] if errors else None,
                              "errors_ms": errors, "timing_answers": answered["timing"], "resent": answered["resent"]}))


if __name__ == "__main__":
    main()
