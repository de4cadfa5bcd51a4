#!/usr/bin/env python3
"""Watches the now-playing surfaces for the benchmark and notes when each title first shows:
metadata pipes (minm items), MQTT (mosquitto_sub, TOPIC/title), MPRIS (dbus-monitor on the
session bus, PropertiesChanged with xesam:title) and the page's event stream (/events).
Runs until SIGTERM, then writes {"seen": {surface: {title: epoch seconds}}} to OUT.

usage: surface_watch.py OUT [pipe:NAME=PATH] [mqtt:PORT=TOPIC_FILTER] [mpris] [page:NAME=URL]
"""
import base64
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.request

seen = {}
lock = threading.Lock()
stop = threading.Event()
children = []


def note(surface, title):
    now = time.time()
    with lock:
        seen.setdefault(surface, {}).setdefault(title, now)


def watch_pipe(name, path):
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    buffer = b""
    item = re.compile(rb'<item><type>636f7265</type><code>6d696e6d</code><length>\d+</length>\n<data encoding="base64">\n([^<]*)</data></item>\n')
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], 0.1)
        if not ready:
            continue
        try:
            buffer += os.read(fd, 1 << 16)
        except BlockingIOError:
            continue
        for match in item.finditer(buffer):
            note(f"pipe:{name}", base64.b64decode(match.group(1)).decode())
        cut = buffer.rfind(b"</item>\n")
        if cut >= 0:
            buffer = buffer[cut + 8:]


def watch_mqtt(port, topics):
    process = subprocess.Popen(["mosquitto_sub", "-p", port, "-F", "%t|%p"] + sum((["-t", t] for t in topics.split(",")), []),
                               stdout=subprocess.PIPE, text=True, errors="replace")
    children.append(process)
    while not stop.is_set():
        line = process.stdout.readline()
        if not line:
            break
        topic, _, payload = line.rstrip("\n").partition("|")
        if topic.endswith("/title") and payload:
            note("mqtt:" + topic.split("/")[1], payload)
    process.terminate()


def watch_mpris():
    process = subprocess.Popen(["dbus-monitor", "--session", "--monitor",
                                "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"],
                               stdout=subprocess.PIPE, text=True, errors="replace")
    children.append(process)
    expect_title = False
    while not stop.is_set():
        line = process.stdout.readline()
        if not line:
            break
        if '"xesam:title"' in line:
            expect_title = True
            continue
        if expect_title:
            match = re.search(r'variant\s+string "(.*)"', line)
            if match:
                title = match.group(1)
                note("mpris:" + title.split(" ")[0], title)
            expect_title = False
    process.terminate()


def watch_page(name, url):
    while not stop.is_set():
        try:
            with urllib.request.urlopen(url, timeout=2) as stream:
                for raw in stream:
                    if stop.is_set():
                        return
                    line = raw.decode(errors="replace")
                    if line.startswith("data: "):
                        title = json.loads(line[6:]).get("title")
                        if title:
                            note(f"page:{name}", title)
        except Exception:  # noqa: BLE001 - the page may not be up yet
            time.sleep(0.2)


def main():
    out = sys.argv[1]
    threads = []
    for spec in sys.argv[2:]:
        kind, _, rest = spec.partition(":")
        if kind == "pipe":
            name, _, path = rest.partition("=")
            threads.append(threading.Thread(target=watch_pipe, args=(name, path), daemon=True))
        elif kind == "mqtt":
            port, _, topics = rest.partition("=")
            threads.append(threading.Thread(target=watch_mqtt, args=(port, topics), daemon=True))
        elif kind == "mpris":
            threads.append(threading.Thread(target=watch_mpris, daemon=True))
        elif kind == "page":
            name, _, url = rest.partition("=")
            threads.append(threading.Thread(target=watch_page, args=(name, url), daemon=True))
    for thread in threads:
        thread.start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("watching", flush=True)
    while not stop.is_set():
        time.sleep(0.1)
    for child in children:
        child.terminate()
    with lock:
        json.dump({"seen": seen}, open(out, "w"))


main()
