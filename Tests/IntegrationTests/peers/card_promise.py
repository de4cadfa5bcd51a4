#!/usr/bin/env python3
"""When each second of a stream left a simulated sound card, against when its sender meant it.

The sender says when the stream's first frame is heard, on its PTP clock (its host's
CLOCK_REALTIME, in ns); frame k of the file is then meant k / 44100 s later. The card recorded
what it played and when (RECORD.pcm, RECORD.timing, on CLOCK_MONOTONIC). Once a second, a 4-frame
probe of the file's own samples is found in the card's record (near where the last one was) and
its leave time compared with the promise.

usage: card_promise.py REFERENCE.raw RECORD FIRST_FRAME_NS REALTIME_MINUS_MONOTONIC_NS
       (REFERENCE.raw: the file decoded to S16LE stereo 44.1 kHz)
prints: OK {"errors_ms": [per second: leave time minus promise], "matched", "seconds"}
"""
import json
import sys

RATE, FRAME = 44100, 4


def load_timing(record):
    runs = []
    with open(record + ".timing") as handle:
        for line in handle:
            parts = line.split()
            if parts and parts[0] == "run":
                runs.append((int(parts[1]), int(parts[2]), float(parts[3])))
                if len(parts) > 4 and int(parts[4]) != FRAME:
                    raise SystemExit(f"FAIL {record} holds {parts[4]}-byte frames, not S16LE stereo")
    return runs


def leave_time(runs, frame):
    chosen = None
    for run in runs:
        if run[1] <= frame:
            chosen = run
    if chosen is None:
        return None
    start, first, rate = chosen
    return start / 1e9 + (frame - first) / rate


def main():
    reference_path, record, first_ns, offset_ns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(reference_path, "rb") as handle:
        reference = handle.read()
    with open(record + ".pcm", "rb") as handle:
        played = handle.read()
    runs = load_timing(record)
    first_monotonic = (first_ns - offset_ns) / 1e9
    errors, matched, guess = [], 0, None
    seconds = len(reference) // FRAME // RATE
    for second in range(1, seconds):
        frame = second * RATE
        key = reference[frame * FRAME:(frame + 4) * FRAME]
        if not any(key):
            continue
        if guess is None:
            low, high = 0, len(played)
        else:
            low, high = max(0, (frame + guess - 2000) * FRAME), min(len(played), (frame + guess + 2000) * FRAME + len(key))
        found, position = None, played.find(key, low, high)
        while position >= 0:
            if position % FRAME == 0:
                candidate = position // FRAME
                if found is None or guess is None or abs(candidate - frame - guess) < abs(found - frame - guess):
                    found = candidate
                if guess is None:
                    break
            position = played.find(key, position + 1, high)
        if found is None:
            continue
        guess = found - frame
        left = leave_time(runs, found)
        if left is None:
            continue
        matched += 1
        errors.append(round((left - (first_monotonic + frame / RATE)) * 1000, 3))
    print("OK " + json.dumps({"errors_ms": errors, "matched": matched, "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
