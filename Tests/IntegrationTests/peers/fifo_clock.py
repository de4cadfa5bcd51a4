#!/usr/bin/env python3
"""Times when two receivers play the same frames: reads both receivers' raw PCM FIFOs and
notes the monotonic time each chunk arrives (raw outputs are written when the frames are due).

Usage: fifo_clock.py FIFO_A FIFO_B TIMEOUT_SECONDS
Opens both FIFOs for reading (so the receivers can open them for writing), reads until both
writers have come and gone or the timeout passes, then prints "OK {json}" with, for each whole
second of the output, how much later B played its frames than A (milliseconds), and whether
the two outputs hold the same samples.

A raw output may write a packet up to 10 ms before it is due (in pairs, the same pairs on every
receiver), and this reader sometimes wakes between the two writes of a pair: one frame's
arrival can then be off by a packet for one receiver alone. So each second's skew is the
median over 100 frames spread through it, not one frame's.
"""
import json, os, select, sys, time

paths, timeout = sys.argv[1:3], float(sys.argv[3])
fds = [os.open(p, os.O_RDONLY | os.O_NONBLOCK) for p in paths]
chunks = [[], []]          # (arrival time, bytes so far) after each read
data = [bytearray(), bytearray()]
done = [False, False]
start = time.monotonic()
while not all(done) and time.monotonic() - start < timeout:
    ready, _, _ = select.select([fd for fd, d in zip(fds, done) if not d], [], [], 0.05)
    for fd in ready:
        i = fds.index(fd)
        block = os.read(fd, 1 << 16)
        if block:
            data[i] += block
            chunks[i].append((time.monotonic(), len(data[i])))
        elif data[i]:
            done[i] = True   # the writer closed after writing
        else:
            time.sleep(0.01)  # no writer yet: a FIFO reads as end-of-file until one opens it


def played_at(i, frame):
    """When frame `frame` of output i was written: its chunk's arrival, less the frames after it."""
    wanted = (frame + 1) * 4
    for arrival, total in chunks[i]:
        if total >= wanted:
            return arrival - (total - wanted) / 4 / 44100
    return None


frames = min(len(data[0]), len(data[1])) // 4
skews = []
for second in range(1, int(frames / 44100)):
    differences = []
    for step in range(100):
        frame = second * 44100 + step * 441
        if frame >= frames:
            break
        a, b = played_at(0, frame), played_at(1, frame)
        if a is not None and b is not None:
            differences.append(b - a)
    if differences:
        skews.append(round(sorted(differences)[len(differences) // 2] * 1000, 2))
same = data[0][:frames * 4] == data[1][:frames * 4]
print("OK " + json.dumps({"frames": frames, "skews_ms": skews, "same_samples": same,
                          "max_ms": max((abs(s) for s in skews), default=None)}))
