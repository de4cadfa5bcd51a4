#!/usr/bin/env python3
"""A userspace Ethernet bridge that impairs a link the way a busy Wi-Fi network does, which the
kernel's netem would do if this machine's kernel had it: every frame is delayed by DELAY ± JITTER
milliseconds (uniformly, each frame on its own, so frames overtake each other), LOSS percent of
IP frames are dropped, and on request some are held back further (reordered) or sent twice.

Usage: jitter_bridge.py IFACE_A IFACE_B DELAY_MS JITTER_MS LOSS_PERCENT SECONDS [options]
  --reorder P        P percent of frames wait a further DELAY + JITTER + 10 ms, behind later ones
  --duplicate P      P percent of frames are sent twice, the copy with a delay of its own
  --udp-only         impair only UDP datagrams (TCP and the rest pass with the plain delay)
  --loss-seconds S   drop only during the first S seconds, then stop dropping (recovery)
  --corrupt P        P percent of IPv4 UDP datagrams of 200 bytes or more (audio, not clocks or
                     control) get one payload byte past the RTP header flipped, their UDP checksum
                     cleared (none, as IPv4 allows) so the box reads them: a sender whose keys are
                     not the box's, as the box sees it
  --seed N           the random seed (1)

Run it in a network namespace holding both interfaces (promiscuous, offloads off, so every
frame is an ordinary frame of at most the MTU); it forwards between them for SECONDS, then
prints "OK {json}" with what it forwarded, dropped, duplicated and reordered (frames that left
after a frame that had arrived later than them), and the delays it applied.

Each frame's delay counts from the kernel's receive stamp, not from when this process got to
read it: on a loaded machine a burst on one side would otherwise wait in the socket's queue,
and that side's frames (a sender's audio burst and the PTP Syncs behind it) would be slower
than the other's by the backlog, an asymmetry of ours, not of the link being modelled.
"""
import argparse, heapq, json, random, select, signal, socket, struct, time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)   # Linux; also the ancillary type (SCM_TIMESTAMPNS)

parser = argparse.ArgumentParser()
for name in ("a", "b"):
    parser.add_argument(name)
for name in ("delay", "jitter", "loss", "seconds"):
    parser.add_argument(name, type=float)
parser.add_argument("--reorder", type=float, default=0)
parser.add_argument("--duplicate", type=float, default=0)
parser.add_argument("--udp-only", action="store_true")
parser.add_argument("--loss-seconds", type=float, default=None)
parser.add_argument("--corrupt", type=float, default=0)
parser.add_argument("--seed", type=int, default=1)
options = parser.parse_args()
a, b = options.a, options.b
delay, jitter = options.delay / 1000, options.jitter / 1000
loss, reorder, duplicate = options.loss / 100, options.reorder / 100, options.duplicate / 100

sockets = {}
for name in (a, b):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((name, 0))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setblocking(False)
    sockets[name] = s
other = {a: sockets[b], b: sockets[a]}
by_fd = {sockets[a].fileno(): a, sockets[b].fileno(): b}
queue, order = [], 0   # (due, order, socket, frame, arrival number)
counts = {"forwarded": 0, "dropped": 0, "duplicated": 0, "held_back": 0, "reordered": 0, "impaired": 0, "corrupted": 0}
last_sent = {}         # per outgoing socket: the highest arrival number sent so far
applied = []
random.seed(options.seed)
started = time.monotonic()
end = started + options.seconds
stopped = False


def stop(*_):
    global stopped
    stopped = True


def udp(frame):
    """Whether an Ethernet frame carries a UDP datagram (IPv4 or IPv6 without extension headers)."""
    kind = frame[12:14]
    return (kind == b"\x08\x00" and len(frame) > 23 and frame[23] == 17) or (kind == b"\x86\xdd" and len(frame) > 20 and frame[20] == 17)


def corrupted(frame):
    """The frame with one audio payload byte flipped, or None when it is not a large IPv4 UDP datagram."""
    if frame[12:14] != b"\x08\x00" or len(frame) < 34 or frame[23] != 17:
        return None
    udp_start = 14 + (frame[14] & 0x0F) * 4
    payload = udp_start + 8
    if len(frame) - payload < 200:
        return None
    changed = bytearray(frame)
    changed[udp_start + 6:udp_start + 8] = b"\x00\x00"
    position = payload + 12 + random.randrange(len(frame) - payload - 12)
    changed[position] ^= 0x5A
    return bytes(changed)


def send_due(now):
    while queue and queue[0][0] <= now:
        _, _, out, frame, number = heapq.heappop(queue)
        try:
            out.send(frame)
            counts["forwarded"] += 1
        except OSError:
            counts["dropped"] += 1
            continue
        highest = last_sent.get(out.fileno(), -1)
        if number < highest:
            counts["reordered"] += 1
        last_sent[out.fileno()] = max(highest, number)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
while time.monotonic() < end and not stopped:
    now = time.monotonic()
    send_due(now)
    timeout = max(0, min(0.05, (queue[0][0] - now) if queue else 0.05))
    try:
        ready, _, _ = select.select(list(by_fd), [], [], timeout)
    except InterruptedError:
        continue
    for fd in ready:
        name = by_fd[fd]
        while True:
            try:
                frame, ancillary, _, address = sockets[name].recvmsg(65536, 64)
            except BlockingIOError:
                break
            if address[2] == PACKET_OUTGOING:
                continue   # our own send on this interface
            # The kernel's receive stamp (CLOCK_REALTIME) on our monotonic clock.
            arrived = time.monotonic()
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                    seconds, nanoseconds = struct.unpack("qq", data[:16])
                    arrived = min(arrived, time.monotonic() - (time.time() - (seconds + nanoseconds / 1e9)))
            impaired = frame[12:14] in (b"\x08\x00", b"\x86\xdd") and (not options.udp_only or udp(frame))
            order += 1
            number = order
            if impaired:
                counts["impaired"] += 1
                dropping = options.loss_seconds is None or arrived - started < options.loss_seconds
                if dropping and random.random() < loss:
                    counts["dropped"] += 1
                    continue
            if impaired and options.corrupt > 0 and random.random() < options.corrupt / 100:
                changed = corrupted(frame)
                if changed is not None:
                    frame = changed
                    counts["corrupted"] += 1
            wait = max(0.0, delay + random.uniform(-jitter, jitter))
            if impaired and random.random() < reorder:
                wait += delay + jitter + 0.010
                counts["held_back"] += 1
            applied.append(wait)
            heapq.heappush(queue, (arrived + wait, order, other[name], frame, number))
            if impaired and random.random() < duplicate:
                order += 1
                counts["duplicated"] += 1
                heapq.heappush(queue, (arrived + max(0.0, delay + random.uniform(-jitter, jitter)), order, other[name], frame, number))
send_due(float("inf"))
applied.sort()
print("OK " + json.dumps(dict(counts, delay_ms={"min": round(applied[0] * 1000, 2) if applied else None,
                                                "p50": round(applied[len(applied) // 2] * 1000, 2) if applied else None,
                                                "max": round(applied[-1] * 1000, 2) if applied else None})), flush=True)
