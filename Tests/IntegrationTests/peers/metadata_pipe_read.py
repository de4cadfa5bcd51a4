#!/usr/bin/env python3
"""Reads a shairport-sync style metadata pipe strictly and writes its items as JSON.

The framing is checked byte for byte as shairport-sync 3.3 writes it: `<item><type>8 hex
</type><code>8 hex</code><length>N</length>`, then, only when N > 0, `\\n<data
encoding="base64">\\n` + one base64 line + `</data>`, then `</item>\\n`. The FIFO is opened
read-write so it never reports end-of-file while writers come and go.

usage: metadata_pipe_read.py FIFO SECONDS OUT_JSON
Writes {"items": [{"type", "code", "length", "data"(base64)}...], "errors": [...]} to OUT_JSON
when SECONDS have passed (or on SIGTERM).
"""
import base64
import json
import os
import re
import select
import signal
import sys
import time

ITEM = re.compile(rb'<item><type>([0-9a-f]{8})</type><code>([0-9a-f]{8})</code><length>(\d+)</length>')
DATA_OPEN = b'\n<data encoding="base64">\n'


def parse(buffer, items, errors):
    """Takes whole items off the front of buffer; returns what is left."""
    while True:
        start = buffer.find(b"<item>")
        if start < 0:
            return buffer
        if start > 0:
            errors.append(f"junk before an item: {buffer[:start][:80]!r}")
            buffer = buffer[start:]
        head = ITEM.match(buffer)
        if not head:
            if len(buffer) > 200:
                errors.append(f"bad item head: {buffer[:120]!r}")
                buffer = buffer[6:]
                continue
            return buffer
        length = int(head.group(3))
        rest = buffer[head.end():]
        data = b""
        if length > 0:
            if len(rest) < len(DATA_OPEN):
                return buffer
            if not rest.startswith(DATA_OPEN):
                errors.append(f"no data element for length {length}: {rest[:60]!r}")
                buffer = rest
                continue
            end = rest.find(b"</data>", len(DATA_OPEN))
            if end < 0:
                return buffer
            encoded = rest[len(DATA_OPEN):end]
            if b"\n" in encoded:
                errors.append("base64 broken over lines")
            data = base64.b64decode(encoded)
            if len(data) != length:
                errors.append(f"length {length} but {len(data)} bytes of data")
            rest = rest[end + len(b"</data>"):]
        if len(rest) < len(b"</item>\n"):
            return buffer
        if not rest.startswith(b"</item>\n"):
            errors.append(f"item not closed by </item>\\n: {rest[:40]!r}")
        else:
            rest = rest[len(b"</item>\n"):]
        items.append({
            "type": bytes.fromhex(head.group(1).decode()).decode("latin-1"),
            "code": bytes.fromhex(head.group(2).decode()).decode("latin-1"),
            "length": length,
            "data": base64.b64encode(data).decode(),
        })
        buffer = rest


def main():
    path, seconds, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    if not os.path.exists(path):
        os.mkfifo(path, 0o666)
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    items, errors, buffer = [], [], b""
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    deadline = time.monotonic() + seconds
    print("reading", flush=True)
    while not stop["now"] and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            buffer = parse(buffer + chunk, items, errors)
    if buffer.strip():
        errors.append(f"{len(buffer)} bytes of an unfinished item at the end")
    with open(out, "w") as handle:
        json.dump({"items": items, "errors": errors}, handle)


main()
