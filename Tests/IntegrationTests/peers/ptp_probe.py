#!/usr/bin/env python3
"""Samples airplayd's PTP follower: GET /ptp on the box's control port every INTERVAL seconds
for SECONDS, and prints one JSON line with every sample: the time since the start, how far the
followed master's clock is from this (shared) kernel clock in nanoseconds, and which clocks the
follower hears.

Usage: ptp_probe.py PORT SECONDS INTERVAL
"""
import json, sys, time, urllib.request

port, seconds, interval = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
start = time.monotonic()
samples = []
while time.monotonic() - start < seconds:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ptp", timeout=2) as response:
            status = json.load(response)
        followed = [c for c in status["clocks"] if c["followed"]]
        samples.append({"t": round(time.monotonic() - start, 3), "offset_ns": status["offset_to_system_clock_ns"],
                        "clocks": len(status["clocks"]), "followed": followed[0]["address"] if followed else None,
                        "path_delay_ns": followed[0]["path_delay_ns"] if followed else None})
    except Exception as error:  # a failed poll is a sample without an offset
        samples.append({"t": round(time.monotonic() - start, 3), "offset_ns": None, "error": str(error)})
    time.sleep(interval)
print(json.dumps({"samples": samples}))
