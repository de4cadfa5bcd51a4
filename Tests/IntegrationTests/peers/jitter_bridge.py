#!/usr/bin/env python3
"""A userspace Ethernet bridge that delays every frame by DELAY ± JITTER milliseconds (uniformly,
each frame on its own, so frames overtake each other) and drops LOSS percent of IP frames: the
impaired link the kernel's netem would give, which this machine's kernel lacks.

Usage: jitter_bridge.py IFACE_A IFACE_B DELAY_MS JITTER_MS LOSS_PERCENT SECONDS

Run it in a network namespace holding both interfaces (promiscuous, offloads off, so every
frame is an ordinary frame of at most the MTU); it forwards between them for SECONDS, then
prints "OK {json}" with what it forwarded, dropped, and the delays it applied.

Each frame's delay counts from the kernel's receive stamp, not from when this process got to
read it: on a loaded machine a burst on one side would otherwise wait in the socket's queue,
and that side's frames (a sender's audio burst and the PTP Syncs behind it) would be slower
than the other's by the backlog, an asymmetry of ours, not of the link being modelled.
"""
import heapq, json, random, select, signal, socket, struct, sys, time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)   # Linux; also the ancillary type (SCM_TIMESTAMPNS)

a, b = sys.argv[1], sys.argv[2]
delay, jitter, loss, seconds = float(sys.argv[3]) / 1000, float(sys.argv[4]) / 1000, float(sys.argv[5]) / 100, float(sys.argv[6])
sockets = {}
for name in (a, b):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((name, 0))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setblocking(False)
    sockets[name] = s
other = {a: sockets[b], b: sockets[a]}
by_fd = {sockets[a].fileno(): a, sockets[b].fileno(): b}
queue, order = [], 0   # (due, order, socket, frame)
forwarded = dropped = 0
applied = []
random.seed(1)
end = time.monotonic() + seconds
stopped = False


def stop(*_):
    global stopped
    stopped = True


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
while time.monotonic() < end and not stopped:
    now = time.monotonic()
    while queue and queue[0][0] <= now:
        _, _, out, frame = heapq.heappop(queue)
        try:
            out.send(frame)
            forwarded += 1
        except OSError:
            dropped += 1
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
            is_ip = frame[12:14] in (b"\x08\x00", b"\x86\xdd")
            if is_ip and random.random() < loss:
                dropped += 1
                continue
            wait = max(0.0, delay + random.uniform(-jitter, jitter))
            applied.append(wait)
            order += 1
            heapq.heappush(queue, (arrived + wait, order, other[name], frame))
applied.sort()
print("OK " + json.dumps({"forwarded": forwarded, "dropped": dropped,
                          "delay_ms": {"min": round(applied[0] * 1000, 2) if applied else None,
                                       "p50": round(applied[len(applied) // 2] * 1000, 2) if applied else None,
                                       "max": round(applied[-1] * 1000, 2) if applied else None}}), flush=True)
