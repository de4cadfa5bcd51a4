#!/usr/bin/env python3
"""Times when several receivers play the same frames: reads every receiver's raw PCM FIFO and
notes the monotonic time each chunk arrives (raw outputs are written when the frames are due).

Usage: fifo_clock.py [--pcm s24le/48000] [--save PATH] FIFO_A FIFO_B [FIFO_C ...] TIMEOUT_SECONDS
(`--save` writes what output A played to PATH.)
Opens the FIFOs for reading (so the receivers can open them for writing), reads until every
writer has come and gone or the timeout passes, then prints "OK {json}" with, for each whole
second of the output, how much later the others played its frames than A (milliseconds; with
more than two outputs, the largest difference of any of them, and each one's in
"by_output_ms"), and whether all outputs hold the same samples.

A raw output writes packets in groups fixed by RTP time (the same groups on every receiver),
the first on time and the others up to 30 ms early, in one write; a receiver that wakes late
writes two groups at once, and one frame's arrival is then off by a group for that receiver
alone. So each second's skew is the median over 100 frames spread through it, not one frame's.
"""
import json, sys

import fifo_read
from fifo_read import played_at as played_in, read_fifos

arguments, save = fifo_read.options(sys.argv[1:])
paths, timeout = arguments[:-1], float(arguments[-1])
chunks, data = read_fifos(paths, timeout)
if save:
    with open(save, "wb") as out:
        out.write(data[0])
size, rate = fifo_read.FRAME_BYTES, fifo_read.RATE


def played_at(i, frame):
    return played_in(chunks[i], frame)


def second_skew(other, second):
    """The median over 100 frames of one second of how much later output `other` played them than A."""
    differences = []
    for step in range(100):
        frame = second * rate + step * (rate // 100)
        if frame >= frames:
            break
        a, b = played_at(0, frame), played_at(other, frame)
        if a is not None and b is not None:
            differences.append(b - a)
    return sorted(differences)[len(differences) // 2] if differences else None


frames = min(len(d) for d in data) // size
skews = []
# Each other output's own skew per second, so a failure names the room that stood apart.
by_output = [[] for _ in paths[1:]]
for second in range(1, int(frames / rate)):
    per_output = [second_skew(i, second) for i in range(1, len(paths))]
    for listed, skew in zip(by_output, per_output):
        listed.append(None if skew is None else round(skew * 1000, 2))
    found = [s for s in per_output if s is not None]
    if found:
        skews.append(round(max(found, key=abs) * 1000, 2))
same = all(d[:frames * size] == data[0][:frames * size] for d in data)
print("OK " + json.dumps({"frames": frames, "skews_ms": skews, "same_samples": same, "by_output_ms": by_output,
                          "max_ms": max((abs(s) for s in skews), default=None)}))
