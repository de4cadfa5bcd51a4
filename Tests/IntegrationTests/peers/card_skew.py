#!/usr/bin/env python3
"""How far apart the same frames left several simulated sound cards (Tests/SimulatedSoundCard).

Each card recorded what it played (RECORD.pcm) and when each run of it started, at which rate
its crystal ran (RECORD.timing), so the moment frame i of RECORD.pcm left the card is
start + (i - first) / rate of the run it belongs to. The cards' frames do not line up by index
(each room put its own silence before the first frame and inserted or removed single frames to
follow its card), so frames are matched by content: ten times a second a 4-frame probe of card
A's audio is looked for in each other card, near where the last probe was found, and the two
leave times are compared.

usage: card_skew.py [--rate 44100] [--frame-bytes 4] [--skip SECONDS] RECORD_A RECORD_B [...]
prints: OK {"skews_ms": [per second: the largest of the other cards' median skew against A],
            "p99_ms", "max_ms", "matched", "probes", "restarts": [per card: runs after the first, i.e. underruns mid-stream],
            "xruns": [per card, the stream's end included], "frames": [per card]}
"""
import json
import sys


def load(record, frame_bytes):
    with open(record + ".pcm", "rb") as handle:
        pcm = handle.read()
    runs, xruns = [], 0
    with open(record + ".timing") as handle:
        for line in handle:
            parts = line.split()
            if parts and parts[0] == "run":
                runs.append((int(parts[1]), int(parts[2]), float(parts[3])))
                if len(parts) > 4 and int(parts[4]) != frame_bytes:
                    raise SystemExit(f"FAIL {record} holds {parts[4]}-byte frames, not {frame_bytes} (--frame-bytes)")
            elif parts and parts[0] == "xrun":
                xruns += 1
    return pcm, runs, xruns


def leave_time(runs, frame):
    """Seconds on CLOCK_MONOTONIC at which `frame` of the record left the card."""
    chosen = None
    for run in runs:
        if run[1] <= frame:
            chosen = run
    if chosen is None:
        return None
    start, first, rate = chosen
    return start / 1e9 + (frame - first) / rate


def first_sound(pcm, frame_bytes):
    for offset in range(0, len(pcm) - frame_bytes, frame_bytes):
        if any(pcm[offset:offset + frame_bytes]):
            return offset // frame_bytes
    return None


def find(pcm, key, around, reach, frame_bytes):
    """The frame nearest `around` (within `reach`) where `key` begins, or None."""
    low = max(0, around - reach) * frame_bytes
    high = min(len(pcm), (around + reach) * frame_bytes + len(key))
    best, position = None, pcm.find(key, low, high)
    while position >= 0:
        if position % frame_bytes == 0:
            frame = position // frame_bytes
            if best is None or abs(frame - around) < abs(best - around):
                best = frame
        position = pcm.find(key, position + 1, high)
    return best


def main():
    args = sys.argv[1:]
    rate, frame_bytes, skip = 44100, 4, 1.0
    while args and args[0].startswith("--"):
        name, value = args[0], args[1]
        args = args[2:]
        if name == "--rate":
            rate = int(value)
        elif name == "--frame-bytes":
            frame_bytes = int(value)
        elif name == "--skip":
            skip = float(value)
    cards = [load(record, frame_bytes) for record in args]
    a_pcm, a_runs, _ = cards[0]
    a_start = first_sound(a_pcm, frame_bytes)
    if a_start is None:
        print("FAIL no audio on the first card")
        return 1
    guesses = []
    for pcm, _, _ in cards[1:]:
        start = first_sound(pcm, frame_bytes)
        if start is None:
            print("FAIL no audio on a card")
            return 1
        guesses.append(start - a_start)
    probe_step = rate // 10
    probe_frames = 4
    per_second = {}
    probes = matched = 0
    frame = a_start + int(skip * rate)
    a_frames = len(a_pcm) // frame_bytes
    while frame + probe_frames < a_frames:
        key = a_pcm[frame * frame_bytes:(frame + probe_frames) * frame_bytes]
        probes += 1
        if not any(key):
            frame += probe_step
            continue
        a_time = leave_time(a_runs, frame)
        second = (frame - a_start) // rate
        skews = []
        for index, (pcm, runs, _) in enumerate(cards[1:]):
            found = find(pcm, key, frame + guesses[index], 400, frame_bytes)
            if found is None:
                found = find(pcm, key, frame + guesses[index], rate // 10, frame_bytes)
            if found is None:
                continue
            guesses[index] = found - frame
            b_time = leave_time(runs, found)
            if a_time is not None and b_time is not None:
                skews.append((b_time - a_time) * 1000)
        if len(skews) == len(cards) - 1:
            matched += 1
            per_second.setdefault(second, []).append(max(skews, key=abs))
        frame += probe_step
    seconds = []
    everything = []
    for second in sorted(per_second):
        values = sorted(per_second[second])
        everything.extend(values)
        seconds.append(round(values[len(values) // 2], 3))
    everything.sort(key=abs)
    p99 = abs(everything[min(len(everything) - 1, int(len(everything) * 0.99))]) if everything else None
    report = {
        "skews_ms": seconds,
        "p99_ms": round(p99, 3) if p99 is not None else None,
        "max_ms": round(max((abs(v) for v in everything), default=0), 3),
        "matched": matched,
        "probes": probes,
        "restarts": [len(runs) - 1 for _, runs, _ in cards],
        "xruns": [xruns for _, _, xruns in cards],
        "frames": [len(pcm) // frame_bytes for pcm, _, _ in cards],
    }
    print("OK " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
