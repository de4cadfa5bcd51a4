#!/usr/bin/env python3
"""Times receivers that did not start together: reads every receiver's raw PCM FIFO with the
monotonic time each chunk arrives (as fifo_clock.py), then finds where each later output's
audio lies in the first one's (by content: the test signal never repeats), and compares when
the same frames were played.

Usage: fifo_align.py FIFO_A FIFO_B [FIFO_C ...] TIMEOUT_SECONDS
Prints "OK {json}": per output, the monotonic time its first non-silent frame arrived
("first_audio"), the frame of output A its audio starts at ("offset"), whether its samples
equal A's from there ("same"), and the per-second skews against A in milliseconds (the median
over 100 frames of each second it played).
"""
import json, sys

from fifo_read import played_at as played_in, read_fifos

paths, timeout = sys.argv[1:-1], float(sys.argv[-1])
chunks, data = read_fifos(paths, timeout)


def played_at(i, frame):
    return played_in(chunks[i], frame)


def first_audio_frame(i):
    for frame in range(len(data[i]) // 4):
        if data[i][frame * 4:frame * 4 + 4] != b"\0\0\0\0":
            return frame
    return None


report = []
for i in range(len(paths)):
    first = first_audio_frame(i)
    entry = {"frames": len(data[i]) // 4, "first_audio": None, "offset": None, "same": False, "skews_ms": []}
    if first is None:
        report.append(entry)
        continue
    entry["first_audio"] = played_at(i, first)
    probe = bytes(data[i][first * 4:(first + 4410) * 4])
    where = data[0].find(probe) if i else first * 4
    if where < 0 or where % 4:
        report.append(entry)
        continue
    offset = where // 4 - first            # frame f of output i is frame f + offset of output A
    entry["offset"] = offset
    length = min(len(data[i]) // 4, len(data[0]) // 4 - offset)
    entry["same"] = data[i][first * 4:length * 4] == data[0][(first + offset) * 4:(length + offset) * 4]
    for second in range(first // 44100 + 1, length // 44100):
        differences = []
        for step in range(100):
            frame = second * 44100 + step * 441
            a, b = played_at(0, frame + offset), played_at(i, frame)
            if a is not None and b is not None:
                differences.append(b - a)
        if differences:
            entry["skews_ms"].append(round(sorted(differences)[len(differences) // 2] * 1000, 2))
    report.append(entry)
print("OK " + json.dumps({"outputs": report}))
