#!/usr/bin/env python3
"""Interop peer: drive airplayd with the PyPI `airplay` package (0.0.5, python-airplay).

Usage (with a Python that has `pip install airplay==0.0.5`):

    python airplay_pypi_client.py HOST PORT MEDIA_URL

The library's own `airplay.AirPlay` class does all the talking; this script never builds a
request itself. That client keeps one TCP connection open, sends bare HTTP/1.1 requests (no
Host, no Content-Type, `Content-Length` always present), reads each reply with a single 8 KiB
`recv`, and accepts only `text/parameters` (parsed as RFC 822 headers) or
`text/x-apple-plist+xml` bodies. Only its request methods are used: no `find()` (zeroconf),
no `events()` (a child process on a PTTH connection), no `serve()`.

Steps: server_info() -> play(MEDIA_URL, 0.0) -> poll scrub() until position > 0.5 ->
scrub(2.0) (POST, then the library's own GET) -> rate(0) and check the position holds for 1 s
-> rate(1) and check it moves again -> stop(). The media should be a progressive MP4 of at least ~6 s served with
HTTP Range support.

Prints one line "OK <json summary>" and exits 0, or "FAIL <reason>" and exits 1. Every socket
operation has a 5 s timeout and the whole run is cut off after 40 s.
"""

import json
import signal
import sys
import time

OVERALL_LIMIT_S = 40
SOCKET_TIMEOUT_S = 5


class Failure(Exception):
    pass


def log(message):
    print(message, flush=True)


def check(condition, reason):
    if not condition:
        raise Failure(reason)


def position_of(reply, label):
    check(isinstance(reply, dict), "{0}: scrub() returned {1!r}, not a dict".format(label, reply))
    check("position" in reply and "duration" in reply,
          "{0}: scrub() reply lacks position/duration: {1!r}".format(label, reply))
    return reply["position"]


def run(host, port, media_url, summary):
    try:
        from airplay import AirPlay
    except ImportError as exc:
        raise Failure("cannot import the PyPI 'airplay' package ({0}); "
                      "install it with: pip install airplay==0.0.5".format(exc))

    # The constructor only opens the control socket (ValueError if it cannot connect).
    try:
        device = AirPlay(host, port, timeout=SOCKET_TIMEOUT_S)
    except ValueError as exc:
        raise Failure(str(exc))
    summary["connected"] = "{0}:{1}".format(host, port)

    # GET /server-info -> XML plist -> dict
    info = device.server_info()
    check(isinstance(info, dict), "server_info() returned {0!r}, not a dict".format(info))
    for key in ("deviceid", "features"):
        check(key in info, "server_info() lacks {0!r}: keys are {1}".format(key, sorted(info)))
    summary["server_info"] = {"deviceid": info["deviceid"], "features": info["features"],
                              "model": info.get("model")}
    log("server_info deviceid={0} features={1} model={2}".format(
        info["deviceid"], info["features"], info.get("model")))

    # POST /play with "Content-Location: URL\nStart-Position: 0.0\n\n"
    played = device.play(media_url, 0.0)
    check(played is True, "play() returned {0!r}, expected True (200 with no body)".format(played))
    summary["play"] = played
    play_sent = time.monotonic()
    log("play -> {0!r}".format(played))

    try:
        # GET /scrub until playback has clearly started.
        deadline = play_sent + 10.0
        samples = []
        position = 0.0
        reply = None
        while True:
            reply = device.scrub()
            position = position_of(reply, "polling after play")
            elapsed = time.monotonic() - play_sent
            samples.append([round(elapsed, 2), round(position, 3)])
            log("scrub t={0:.2f}s position={1:.3f} duration={2:.3f}".format(
                elapsed, position, reply["duration"]))
            if position > 0.5:
                break
            check(time.monotonic() < deadline,
                  "position never passed 0.5 s within 10 s of play: last samples [t, position] {0}".format(
                      samples[-4:]))
            time.sleep(0.25)
        summary["started_after_s"] = round(time.monotonic() - play_sent, 2)
        summary["duration"] = reply["duration"]
        check(reply["duration"] > 0, "scrub() reports duration {0} while playing".format(reply["duration"]))

        # POST /scrub?position=2.0; the library then GETs /scrub itself and returns that.
        after_seek = device.scrub(2.0)
        seek_position = position_of(after_seek, "scrub(2.0)")
        log("scrub(2.0) -> position={0:.3f}".format(seek_position))
        check(seek_position >= 1.5,
              "after scrub(2.0) the next GET /scrub says position {0:.3f} (< 1.5)".format(seek_position))
        summary["after_seek"] = round(seek_position, 3)

        # POST /rate?value=0.0, then the position must stay put.
        paused = device.rate(0)
        check(paused is True, "rate(0) returned {0!r}, expected True".format(paused))
        held_from = position_of(device.scrub(), "after rate(0)")
        time.sleep(1.0)
        held_to = position_of(device.scrub(), "1 s after rate(0)")
        drift = abs(held_to - held_from)
        log("rate(0) -> position {0:.3f} then {1:.3f} one second later (drift {2:.3f})".format(
            held_from, held_to, drift))
        check(drift < 0.1, "paused position moved {0:.3f} s in 1 s ({1:.3f} -> {2:.3f})".format(
            drift, held_from, held_to))
        check(held_from >= 1.5, "position {0:.3f} after pausing is before the seek target".format(held_from))
        summary["paused_at"] = round(held_from, 3)
        summary["paused_drift"] = round(drift, 3)

        # POST /rate?value=1.0
        resumed = device.rate(1)
        check(resumed is True, "rate(1) returned {0!r}, expected True".format(resumed))
        log("rate(1) -> {0!r}".format(resumed))
        deadline = time.monotonic() + 3.0
        while True:
            moving = position_of(device.scrub(), "after rate(1)")
            if moving > held_to + 0.2:
                break
            check(time.monotonic() < deadline,
                  "position stuck at {0:.3f} for 3 s after rate(1)".format(moving))
            time.sleep(0.1)
        log("resumed: position {0:.3f}".format(moving))
        summary["resumed_to"] = round(moving, 3)
    except BaseException:
        # Leave the receiver idle on the way out; the original failure is what gets reported.
        try:
            device.stop()
        except Exception:
            pass
        raise

    # POST /stop
    stopped = device.stop()
    check(stopped is True, "stop() returned {0!r}, expected True".format(stopped))
    summary["stop"] = stopped
    log("stop -> {0!r}".format(stopped))


def main(argv):
    if len(argv) != 4:
        print("usage: {0} HOST PORT MEDIA_URL".format(argv[0]), file=sys.stderr)
        print("FAIL bad arguments")
        return 1
    host, port_text, media_url = argv[1], argv[2], argv[3]
    try:
        port = int(port_text)
    except ValueError:
        print("FAIL port {0!r} is not a number".format(port_text))
        return 1

    def out_of_time(signum, frame):
        raise Failure("gave up after {0} s".format(OVERALL_LIMIT_S))

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(OVERALL_LIMIT_S)

    summary = {}
    started = time.monotonic()
    try:
        run(host, port, media_url, summary)
    except Failure as exc:
        print("FAIL {0}".format(exc), flush=True)
        return 1
    except Exception as exc:  # the library raises RuntimeError, socket errors, parse errors
        print("FAIL {0}: {1} (progress: {2})".format(type(exc).__name__, exc, json.dumps(summary)), flush=True)
        return 1
    finally:
        signal.alarm(0)
    summary["seconds"] = round(time.monotonic() - started, 2)
    print("OK " + json.dumps(summary, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
