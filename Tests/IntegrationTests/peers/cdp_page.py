#!/usr/bin/env python3
"""Drives a headless Chromium (Debian) over the DevTools protocol, with the standard library only.

Opens URL, then every 50 ms reads what the now-playing page shows and prints a JSON line each
time it changes: {"at": epoch ms, "title", "state", "changedAt", "message", "pin"}. Commands come
as files in CONTROL_DIR, so a test can act while it watches:
  click       holds an element id: that element is clicked, then the file is removed
  screenshot  holds a path, and optionally WIDTHxHEIGHT (a phone's screen): a PNG of the page
              is written there, then the file is removed
Runs until SECONDS have passed or SIGTERM.

usage: cdp_page.py URL CONTROL_DIR SECONDS
"""
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request

WATCH = """JSON.stringify({title: document.getElementById('title').textContent,
  state: document.body.dataset.state || '', changedAt: document.body.dataset.titleChangedAt || '',
  message: document.getElementById('message').textContent, pin: document.getElementById('pin').textContent})"""


class Socket:
    """A websocket client: text frames, masked as a client must."""

    def __init__(self, url):
        rest = url.split("://", 1)[1]
        hostport, path = rest.split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(f"no websocket: {head[:100]!r}")
        self.next_id = 0

    def send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        length = len(payload)
        if length < 126:
            header = struct.pack("!BB", 0x81, 0x80 | length)
        elif length < 65536:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, length)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, length)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def exact(self, count):
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise RuntimeError("devtools closed")
            data += chunk
        return data

    def receive(self):
        message = b""
        while True:
            first, second = self.exact(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack("!H", self.exact(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self.exact(8))[0]
            message += self.exact(length)
            if first & 0x80:
                return message.decode()

    def call(self, method, **params):
        self.next_id += 1
        self.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.receive())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})


def main():
    url, control, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    profile = os.path.join(control, "chromium-profile")
    shutil.rmtree(profile, ignore_errors=True)
    browser = subprocess.Popen([
        shutil.which("chromium"), "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
        f"--user-data-dir={profile}", "--window-size=1280,720", "--no-first-run", "--disable-extensions",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
        "--no-default-browser-check", "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if time.monotonic() > deadline:
                raise RuntimeError("chromium did not open its devtools port")
            time.sleep(0.1)
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=10))
        page = next(t for t in targets if t["type"] == "page")
        cdp = Socket(page["webSocketDebuggerUrl"])
        cdp.call("Page.enable")
        cdp.call("Page.navigate", url=url)
        time.sleep(0.5)
        print(json.dumps({"ready": True}), flush=True)
        last = None
        end = time.monotonic() + seconds
        while not stop["now"] and time.monotonic() < end:
            seen = cdp.call("Runtime.evaluate", expression=WATCH, returnByValue=True).get("result", {}).get("value")
            if seen and seen != last:
                last = seen
                shown = json.loads(seen)
                shown["at"] = int(time.time() * 1000)
                print(json.dumps(shown), flush=True)
            click = os.path.join(control, "click")
            if os.path.exists(click):
                element = open(click).read().strip()
                cdp.call("Runtime.evaluate", expression=f"document.getElementById({json.dumps(element)}).click()")
                os.remove(click)
                print(json.dumps({"clicked": element}), flush=True)
            shot = os.path.join(control, "screenshot")
            if os.path.exists(shot):
                request = open(shot).read().split()
                path = request[0]
                if len(request) > 1:
                    width, height = (int(v) for v in request[1].split("x"))
                    cdp.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=2, mobile=True)
                    time.sleep(0.5)
                data = cdp.call("Page.captureScreenshot", format="png")["data"]
                if len(request) > 1:
                    cdp.call("Emulation.clearDeviceMetricsOverride")
                with open(path, "wb") as out:
                    out.write(base64.b64decode(data))
                os.remove(shot)
                print(json.dumps({"screenshot": path}), flush=True)
            time.sleep(0.05)
    finally:
        browser.terminate()
        try:
            browser.wait(5)
        except subprocess.TimeoutExpired:
            browser.kill()


main()
