#!/usr/bin/env python3
"""The figures of tools/bench/dac-drift: two rooms on simulated sound cards whose crystals run
+N and -N ppm, for airplayd and shairport-sync.

  dac_drift.py run CARD_SKEW SYSTEM PPM SECONDS DIR CPU_A CPU_B HWM_KIB_A HWM_KIB_B
      reads DIR/card0 and DIR/card1 (the cards' records, Tests/SimulatedSoundCard) with
      CARD_SKEW (Tests/IntegrationTests/peers/card_skew.py) and the rooms' logs DIR/room0.log
      and DIR/room1.log; prints one JSON line with the run's figures, or a line starting with
      FAIL and exits 1 when the run cannot be trusted (a card played too little, too few
      probes matched).
  dac_drift.py table RESULTS [SHAIRPORT_VERSION]
      prints, from the JSON lines `run` printed, one table per ppm pair and the ratios.

Skew: card_skew.py gives, for each second of the stream, the median of how far apart (ms) the
same frames left the two cards; p50, p99 and max are over the absolute values of those
per-second skews.
Restarts: runs of a card that began after the card's first sound, summed over both cards: the card ran dry (underrun) or was stopped and started again mid-stream.
shairport-sync's start (it opens the card at RECORD, plays up to about 1 ms of silence, closes it and
opens it again to play the stream) is not a restart.
"""
import json
import os
import re
import subprocess
import sys

RATE = 44100


def card_runs(record):
    """(restarts, mid-stream xruns, runs) of one card's record: a restart is a run that began
    after the card's first sound (and before the record's end)."""
    runs, events = [], []
    with open(record + ".timing") as handle:
        for line in handle:
            parts = line.split()
            if parts and parts[0] == "run":
                runs.append(int(parts[2]))
                events.append("run")
            elif parts and parts[0] == "xrun":
                events.append("xrun")
    sound, total = None, 0
    with open(record + ".pcm", "rb") as handle:
        while True:
            block = handle.read(1 << 20)
            if not block:
                break
            if sound is None and block.strip(b"\0"):
                sound = (total * 4 + len(block) - len(block.lstrip(b"\0"))) // 4
            total += len(block) // 4
    sound = total if sound is None else sound
    restarts = sum(1 for first in runs if sound < first < total)
    # An xrun followed by another run happened mid-stream; the last one is the stream's end.
    mid_xruns = sum(1 for index, event in enumerate(events) if event == "xrun" and "run" in events[index + 1:])
    return restarts, mid_xruns, len(runs)


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else None


def room_note(system, log_path):
    """What the room said about its card's clock, from its log."""
    try:
        with open(log_path, errors="replace") as handle:
            text = handle.read()
    except OSError:
        return {}
    if system == "airplayd":
        ended = [line for line in text.splitlines() if "audio session ended" in line]
        found = re.search(r"output\.ppm=(-?[0-9.]+|nan)", ended[-1]) if ended else None
        return {"output_ppm": found.group(1)} if found else {}
    # shairport-sync's statistics (diagnostics.statistics): comma-separated lines, the first
    # field the sync error in ms, the last its rough calculated correction in ppm.
    rows = []
    for line in text.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) >= 17:
            try:
                rows.append([float(field) for field in fields])
            except ValueError:
                pass
    others = [line.strip() for line in text.splitlines()
              if line.strip() and "," not in line and "D-Bus" not in line and "MPRIS" not in line
              and not line.startswith("Playback Stopped")]
    note = {"other_lines": len(others), "first_other": others[0][:160] if others else ""}
    if rows:
        errors = [row[0] for row in rows]
        note.update({"sync_error_ms_last": errors[-1], "sync_error_ms_max": max(errors, key=abs),
                     "net_correction_ppm_last": rows[-1][1], "correction_ppm_last": rows[-1][-1],
                     "output_fps_last": rows[-1][13]})
    return note


def run(args):
    card_skew, system, ppm, seconds, where = args[:5]
    cpu = [float(value) for value in args[5:7]]
    hwm = [int(value) for value in args[7:9]]
    seconds = int(seconds)
    records = [where + "/card0", where + "/card1"]
    result = subprocess.run([sys.executable, card_skew, "--skip", "1"] + records, capture_output=True, text=True)
    line = (result.stdout.strip().splitlines() or [result.stderr.strip()])[-1]
    if result.returncode != 0 or not line.startswith("OK "):
        print(f"FAIL card_skew: {line} {result.stderr.strip()}")
        return 1
    report = json.loads(line[3:])
    skews = [abs(value) for value in report["skews_ms"]]
    restarts, mid_xruns, runs = zip(*(card_runs(record) for record in records))
    played = min(report["frames"]) / RATE
    if played < 0.9 * seconds:
        print(f"FAIL a card played only {played:.1f} s of a {seconds} s stream: {line}")
        return 1
    if report["probes"] == 0 or report["matched"] < 0.5 * report["probes"] or len(skews) < 0.8 * (seconds - 2):
        print(f"FAIL the cards' records do not match: {line}")
        return 1
    print(json.dumps({
        "system": system, "ppm": float(ppm), "seconds": seconds,
        "p50_ms": percentile(skews, 0.5), "p99_ms": percentile(skews, 0.99), "max_ms": max(skews),
        "probe_p99_ms": report["p99_ms"], "probe_max_ms": report["max_ms"],
        "restarts": sum(restarts), "mid_xruns": sum(mid_xruns), "runs": list(runs),
        "matched": report["matched"], "probes": report["probes"], "played_s": round(played, 1),
        "cpu_s": sum(cpu), "cpu_s_rooms": cpu, "rss_mib": sum(hwm) / 1024, "rss_mib_rooms": [value / 1024 for value in hwm],
        "notes": [room_note(system, where + f"/room{index}.log") for index in range(2)],
        "skews_ms": report["skews_ms"],
    }))
    return 0


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def cell(value, digits):
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "-"


def significant(value):
    return f"{value:.2g}" if isinstance(value, float) and value < 0.1 else cell(value, 2)


def table(args):
    with open(args[0]) as handle:
        results = [json.loads(line) for line in handle if line.strip()]
    version = args[1] if len(args) > 1 else ""
    pairs = sorted({result["ppm"] for result in results})
    columns = [("skew p50 ms", "p50_ms", 3), ("p99 ms", "p99_ms", 3), ("max ms", "max_ms", 3),
               ("restarts", "restarts", 0), ("CPU s", "cpu_s", 2), ("peak RSS MiB", "rss_mib", 1)]
    summary = []
    for ppm in pairs:
        by = {result["system"]: result for result in results if result["ppm"] == ppm}
        a, s = by.get("airplayd"), by.get("shairport-sync")
        seconds = (a or s)["seconds"]
        print()
        print(f"±{ppm:g} ppm (card0 +{ppm:g}, card1 -{ppm:g}), {seconds} s stream, both rooms"
              f" (CPU and RSS summed over the two rooms)")
        print(f"{'':34}" + "".join(f"{title:>14}" for title, _, _ in columns))
        for name, result in (("airplayd", a), (f"shairport-sync {version}".strip(), s)):
            if result:
                print(f"{name:34}" + "".join(f"{cell(result[key], digits):>14}" for _, key, digits in columns))
        if a and s:
            print(f"{'ratio airplayd / shairport-sync':34}"
                  + "".join(f"{significant(ratio(a[key], s[key])):>14}" for _, key, _ in columns))
            summary.append((ppm, ratio(a["p99_ms"], s["p99_ms"]), ratio(a["cpu_s"], s["cpu_s"])))
        for name, result in (("airplayd", a), ("shairport-sync", s)):
            if not result:
                continue
            said = []
            for room, note in enumerate(result["notes"]):
                if "output_ppm" in note:
                    said.append(f"room{room} measured its card at {note['output_ppm']} ppm")
                elif "correction_ppm_last" in note:
                    said.append(f"room{room} last sync error {note['sync_error_ms_last']:+.2f} ms"
                                f" (largest {note['sync_error_ms_max']:+.2f}), net correction {note['net_correction_ppm_last']:+.1f} ppm"
                                f" (its estimate {note['correction_ppm_last']:+.1f} ppm)")
                if note.get("other_lines"):
                    said.append(f"room{room} logged {note['other_lines']} other lines, first: {note['first_other']!r}")
            print(f"  {name}: probes matched {result['matched']}/{result['probes']}, probe p99 {result['probe_p99_ms']} ms,"
                  f" mid-stream xruns {result['mid_xruns']}, card runs {result['runs']},"
                  f" played {result['played_s']} s"
                  + ("; " + "; ".join(said) if said else ""))
    if summary:
        print()
        print("airplayd / shairport-sync: p99 skew " + ", ".join(f"{significant(p99)} at ±{ppm:g} ppm" for ppm, p99, _ in summary)
              + "; CPU " + ", ".join(f"{cell(cpu, 2)} at ±{ppm:g} ppm" for ppm, _, cpu in summary)
              + " (below 1: airplayd better)")
    return 0


def main():
    if len(sys.argv) >= 11 and sys.argv[1] == "run":
        return run(sys.argv[2:])
    if len(sys.argv) >= 3 and sys.argv[1] == "table":
        return table(sys.argv[2:])
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main())
