#!/usr/bin/env python3
"""Times remote presses from a receiver to `airplay stream`: starts the sender with the given
arguments, waits until it plays, then presses pause and play in turn COUNT times each, timing
each press from the request leaving to the sender printing its new state (its --json line).

usage: remote_latency.py COUNT PRESS -- AIRPLAY ARGS...
PRESS: http:PORT (POST /now-playing/remote on airplayd's loopback endpoint) or dbus (shairport-
sync's org.gnome.ShairportSync.RemoteControl on the session bus). Prints one JSON object:
{"pause": [seconds...], "play": [seconds...], "failed": N}.
"""
import json, os, select, socket, subprocess, sys, time

def press_http(port, command):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"POST /now-playing/remote?command={command} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".encode())
        reply = b""
        while b"\r\n" not in reply:
            data = s.recv(4096)
            if not data:
                break
            reply += data
    return reply.split(b"\r\n")[0].decode("latin-1")

def press_dbus(command):
    method = {"pause": "Pause", "play": "Play"}[command]
    result = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.gnome.ShairportSync", "/org/gnome/ShairportSync",
                             f"org.gnome.ShairportSync.RemoteControl.{method}"], capture_output=True, text=True, timeout=10)
    return "ok" if result.returncode == 0 else result.stderr.strip()

def main():
    count, press = int(sys.argv[1]), sys.argv[2]
    command = sys.argv[sys.argv.index("--") + 1:]
    sender = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    buffered = b""

    def wait_for(text, timeout):
        nonlocal buffered
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            index = buffered.find(text)
            if index >= 0:
                buffered = buffered[index + len(text):]
                return True
            ready, _, _ = select.select([sender.stdout], [], [], max(0, deadline - time.monotonic()))
            if ready:
                data = os.read(sender.stdout.fileno(), 65536)
                if not data:
                    return False
                buffered += data
        return False

    if not wait_for(b'"event":"started"', 30):
        print(json.dumps({"error": "the sender did not start"}))
        sender.kill()
        return 1
    time.sleep(2)
    timings = {"pause": [], "play": []}
    failed = 0
    for _ in range(count):
        for name, state in (("pause", b'"state":"paused"'), ("play", b'"state":"playing"')):
            buffered = b""
            start = time.monotonic()
            answer = press_http(int(press.split(":")[1]), name) if press.startswith("http:") else press_dbus(name)
            if wait_for(state, 5):
                timings[name].append(time.monotonic() - start)
            else:
                failed += 1
                print(f"{name}: no state change ({answer})", file=sys.stderr)
            time.sleep(0.3)
    sender.terminate()
    sender.wait(timeout=10)
    print(json.dumps({**timings, "failed": failed}))
    return 0

sys.exit(main())
