#!/usr/bin/env python3
"""Measures /play start-up on airplayd against gst-launch-1.0 playbin3, and /playback-info under load.

Called by tools/bench/video-start; prints one table with medians and ratios.
"""
import argparse, plistlib, re, socket, statistics, subprocess, time, uuid


def read_message(sock, buffer):
    """One HTTP message (head + Content-Length body) from a socket; returns (start line, body, rest)."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffer += chunk
    head, rest = buffer.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        rest += sock.recv(65536)
    return head.split(b"\r\n")[0].decode(), rest[:length], rest[length:]


def request(sock, method, target, body=b"", headers=None):
    lines = [f"{method} {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines.append(f"Content-Length: {len(body)}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    start, payload, _ = read_message(sock, b"")
    return start, payload


def airplayd_start(port, url):
    """Seconds from sending POST /play to the `playing` event, and to position > 0."""
    session = str(uuid.uuid4())
    events = socket.create_connection(("127.0.0.1", port), timeout=20)
    events.sendall((f"POST /reverse HTTP/1.1\r\nUpgrade: PTTH/1.0\r\nConnection: Upgrade\r\n"
                    f"X-Apple-Session-ID: {session}\r\nContent-Length: 0\r\n\r\n").encode())
    start, _, pending = read_message(events, b"")
    assert " 101 " in start, start
    control = socket.create_connection(("127.0.0.1", port), timeout=20)
    body = f"Content-Location: {url}\nStart-Position: 0\n".encode()
    t0 = time.monotonic()
    status, _ = request(control, "POST", "/play", body, {"X-Apple-Session-ID": session})
    assert " 200 " in status, status
    playing = None
    while playing is None:
        line, payload, pending = read_message(events, pending)
        events.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        if plistlib.loads(payload).get("state") == "playing":
            playing = time.monotonic() - t0
    moving = None
    while moving is None and time.monotonic() - t0 < 20:
        _, payload = request(control, "GET", "/playback-info", headers={"X-Apple-Session-ID": session})
        if plistlib.loads(payload).get("position", 0) > 0:
            moving = time.monotonic() - t0
        else:
            time.sleep(0.005)
    request(control, "POST", "/stop", headers={"X-Apple-Session-ID": session})
    control.close()
    events.close()
    return playing, moving


def gst_launch_start(url):
    """Seconds from starting gst-launch-1.0 playbin3 to the pipeline reaching PLAYING."""
    return time_to_playing(["playbin3", f"uri={url}", "video-sink=fakesink sync=true", "audio-sink=fakesink sync=true"],
                           "playbin3")


def gst_launch_overhead():
    """The same for a pipeline that has nothing to load: gst-launch's own process and registry start-up."""
    return time_to_playing(["fakesrc", "num-buffers=1000", "!", "fakesink", "sync=false"], "pipeline")


def time_to_playing(pipeline, top):
    t0 = time.monotonic()
    process = subprocess.Popen(["gst-launch-1.0", "-m"] + pipeline,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    elapsed = None
    # gst-launch names the top-level pipeline playbin3-0 / pipeline0; GStreamer 1.22 prints states in lower case.
    pattern = re.compile(r'from element "' + top + r'[^"]*" \(state-changed\).*new-state=\(GstState\)(playing|GST_STATE_PLAYING)')
    for line in process.stdout:
        if pattern.search(line):
            elapsed = time.monotonic() - t0
            break
    process.terminate()
    process.wait(timeout=5)
    return elapsed


def playback_info_load(port, url):
    """wrk with 64 connections against /playback-info while a video plays."""
    session = str(uuid.uuid4())
    control = socket.create_connection(("127.0.0.1", port), timeout=20)
    request(control, "POST", "/play", f"Content-Location: {url}\n".encode(), {"X-Apple-Session-ID": session})
    time.sleep(1.5)
    out = subprocess.run(["wrk", "-t2", "-c64", "-d8s", "--latency", f"http://127.0.0.1:{port}/playback-info"],
                         capture_output=True, text=True, timeout=60).stdout
    request(control, "POST", "/stop", headers={"X-Apple-Session-ID": session})
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, float(p99.group(1)) * scale, int(errors.group(1)) if errors else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--airplayd-port", type=int, required=True)
    parser.add_argument("--media", required=True)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rows = []
    overhead = statistics.median(gst_launch_overhead() for _ in range(args.runs))
    for name, path in (("HLS", "hls/index.m3u8"), ("MP4", "clip.mp4")):
        url = f"{args.media}/{path}"
        ours, moving, theirs = [], [], []
        for _ in range(args.runs):
            playing, moved = airplayd_start(args.airplayd_port, url)
            ours.append(playing)
            moving.append(moved)
            theirs.append(gst_launch_start(url))
        rows.append((name, statistics.median(ours), statistics.median(moving), statistics.median(theirs)))
    print(f"median of {args.runs} runs   airplayd /play->playing  ->position>0  gst-launch->PLAYING  minus start-up  ratio")
    for name, ours, moved, theirs in rows:
        net = max(theirs - overhead, 0.001)
        print(f"{name:<20} {ours * 1000:>19.0f} ms {moved * 1000:>10.0f} ms {theirs * 1000:>16.0f} ms {net * 1000:>12.0f} ms {ours / net:>6.2f}")
    rps, p99, errors = playback_info_load(args.airplayd_port, f"{args.media}/hls/index.m3u8")
    print(f"GET /playback-info, 64 connections (wrk, 8 s): {rps:.0f} requests/s, p99 {p99:.2f} ms, non-2xx {errors}")
    print(f"(gst-launch start-up measured with an empty pipeline: {overhead * 1000:.0f} ms; "
          "ratio = airplayd /play->playing over gst-launch minus start-up; lower is better)")


if __name__ == "__main__":
    main()
