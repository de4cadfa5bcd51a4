#!/usr/bin/env python3
"""When each second of a stream left a simulated sound card, against when its sender meant it.

The sender says when the stream's first frame is heard, on its PTP clock (its host's
CLOCK_REALTIME, in ns); frame k of the file is then meant k / 44100 s later. The card recorded
what it played and when (RECORD.pcm, RECORD.timing, on CLOCK_MONOTONIC). Once a second, a 4-frame
probe of the file's own samples is found in the card's record (near where the last one was) and
its leave time compared with the promise.

usage: card_promise.py REFERENCE.raw RECORD FIRST_FRAME_NS REALTIME_MINUS_MONOTONIC_NS
       (REFERENCE.raw: the file decoded to S16LE stereo 44.1 kHz)
prints: OK {"errors_ms": [per second: leave time minus promise], "matched", "seconds",
            "exact": the share of the file's 4 KiB blocks found unchanged in the card's record where
                     the first probe placed the file (1.0: bit-exact, no frame added or removed)}
"""
import json
import sys

from card_skew import leave_time, load

RATE, FRAME = 44100, 4


def main():
    reference_path, record, first_ns, offset_ns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(reference_path, "rb") as handle:
        reference = handle.read()
    played, runs, _ = load(record, FRAME)
    first_monotonic = (first_ns - offset_ns) / 1e9
    errors, matched, guess, placed = [], 0, None, None
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
        if placed is None:
            placed = guess
        left = leave_time(runs, found)
        if left is None:
            continue
        matched += 1
        errors.append(round((left - (first_monotonic + frame / RATE)) * 1000, 3))
    exact = 0.0
    if placed is not None and placed >= 0:
        start, block = placed * FRAME, 4096
        blocks = len(reference) // block
        same = sum(1 for index in range(blocks)
                   if played[start + index * block:start + (index + 1) * block] == reference[index * block:(index + 1) * block])
        exact = same / blocks if blocks else 0.0
    print("OK " + json.dumps({"errors_ms": errors, "matched": matched, "seconds": seconds, "exact": exact}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
