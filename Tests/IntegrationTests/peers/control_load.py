#!/usr/bin/env python3
"""Loads a control port the way a crowd of clients would, and says how it was answered.

Usage:
  control_load.py PORT connections N
      opens N connections at once, each asks `GET /info` and keeps its connection open until
      every one has its answer; counts the statuses (200, 503 …) and the connections that got
      nothing at all.
  control_load.py PORT flood SECONDS
      8 connections pipeline `OPTIONS * RTSP/1.0` as fast as the box answers (100 requests in
      flight each), checking that every reply carries its request's CSeq in order; meanwhile a
      probe asks `GET /info` on a connection of its own ten times a second and times it.
  control_load.py PORT slowloris SECONDS N [options]
      from 127.0.0.2, N connections each send a request's first bytes and then one byte every
      half second, never finishing it (one the box closes is opened again 0.2 s later); meanwhile from
      127.0.0.1 a client asks `GET /server-info` (or with `options`, `OPTIONS *` over RTSP, which
      every AirPlay receiver answers) on a fresh connection 50 times a second and times each answer.

Prints "OK {json}" with what it counted; exits 1 when something was not answered as asked.
Every loop is bounded in time.
"""
import json, selectors, socket, sys, time

port, mode = int(sys.argv[1]), sys.argv[2]


def status_line(data):
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def connections(count):
    selector = selectors.DefaultSelector()
    sockets = []
    for _ in range(count):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        selector.register(s, selectors.EVENT_WRITE, {"sent": False, "data": b""})
        sockets.append(s)
    statuses, answered, deadline = {}, 0, time.monotonic() + 90
    while answered < count and time.monotonic() < deadline:
        for key, events in selector.select(timeout=1):
            s, state = key.fileobj, key.data
            if events & selectors.EVENT_WRITE and not state["sent"]:
                try:
                    s.send(b"GET /info HTTP/1.1\r\nHost: box\r\n\r\n")
                except OSError:
                    statuses["send failed"] = statuses.get("send failed", 0) + 1
                    answered += 1
                    selector.unregister(s)
                    continue
                state["sent"] = True
                selector.modify(s, selectors.EVENT_READ, state)
            elif events & selectors.EVENT_READ:
                try:
                    chunk = s.recv(65536)
                except OSError:
                    chunk = b""
                state["data"] += chunk
                if b"\r\n" in state["data"] or not chunk:
                    status = status_line(state["data"]) if state["data"] else "closed"
                    statuses[str(status)] = statuses.get(str(status), 0) + 1
                    answered += 1
                    selector.unregister(s)   # kept open: the crowd stays until all are answered
    unanswered = count - answered
    for s in sockets:
        s.close()
    print("OK " + json.dumps({"statuses": statuses, "unanswered": unanswered}), flush=True)
    return unanswered == 0


def flood(seconds):
    connections = []
    for _ in range(8):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.setblocking(False)
        connections.append({"socket": s, "next": 1, "expected": 1, "buffer": b"", "out": b""})
    probe = socket.create_connection(("127.0.0.1", port), timeout=5)
    selector = selectors.DefaultSelector()
    for c in connections:
        selector.register(c["socket"], selectors.EVENT_READ, c)
    answered, wrong, probes, started = 0, 0, [], time.monotonic()
    next_probe = started
    while time.monotonic() - started < seconds:
        for c in connections:
            # Keep 100 requests in flight on each connection.
            if c["next"] - c["expected"] < 100:
                c["out"] += b"".join(b"OPTIONS * RTSP/1.0\r\nCSeq: %d\r\n\r\n" % n for n in range(c["next"], c["next"] + 100))
                c["next"] += 100
            if c["out"]:
                try:
                    sent = c["socket"].send(c["out"])
                except BlockingIOError:
                    sent = 0
                except OSError:
                    print("the box closed a flooding connection", file=sys.stderr)
                    return False
                c["out"] = c["out"][sent:]
        for key, _ in selector.select(timeout=0.05):
            c = key.data
            try:
                chunk = c["socket"].recv(262144)
            except BlockingIOError:
                continue
            if not chunk:
                print("the box closed a flooding connection", file=sys.stderr)
                return False
            c["buffer"] += chunk
            while b"\r\n\r\n" in c["buffer"]:
                head, c["buffer"] = c["buffer"].split(b"\r\n\r\n", 1)
                cseq = [line.split(b":", 1)[1].strip() for line in head.split(b"\r\n") if line.lower().startswith(b"cseq:")]
                if status_line(head) != 200 or cseq != [str(c["expected"]).encode()]:
                    wrong += 1
                c["expected"] += 1
                answered += 1
        if time.monotonic() >= next_probe:
            next_probe += 0.1
            asked = time.monotonic()
            probe.sendall(b"GET /info HTTP/1.1\r\nHost: box\r\n\r\n")
            data = b""
            while b"</plist>" not in data:
                chunk = probe.recv(65536)
                if not chunk:
                    print("the box closed the probe", file=sys.stderr)
                    return False
                data += chunk
            probes.append((time.monotonic() - asked) * 1000)
    elapsed = time.monotonic() - started
    probes.sort()
    print("OK " + json.dumps({"answered": answered, "per_second": round(answered / elapsed), "wrong": wrong,
                              "probes": len(probes), "probe_p50_ms": round(probes[len(probes) // 2], 2),
                              "probe_max_ms": round(probes[-1], 2)}), flush=True)
    return wrong == 0



def slowloris(seconds, count, request):
    import threading
    stop = time.monotonic() + seconds
    good = {"statuses": {}, "latencies": []}

    def ask():
        while time.monotonic() < stop:
            asked = time.monotonic()
            status = "closed"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.1", 0)) as s:
                    s.sendall(request)
                    data = b""
                    while b"\r\n" not in data:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    status = str(status_line(data)) if data else "closed"
            except OSError as error:
                status = type(error).__name__
            good["statuses"][status] = good["statuses"].get(status, 0) + 1
            good["latencies"].append((time.monotonic() - asked) * 1000)
            time.sleep(max(0, asked + 0.02 - time.monotonic()))

    asker = threading.Thread(target=ask)
    asker.start()
    selector = selectors.DefaultSelector()
    opened, cut = 0, 0

    def open_one():
        nonlocal opened
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        selector.register(s, selectors.EVENT_READ, {"next": time.monotonic() + 0.05, "sent": 0})
        opened += 1

    for _ in range(count):
        open_one()
    head = b"GET /server-info HTTP/1.1\r\nHost: box\r\nX-Slow: "
    reopen = []   # when each connection the box let go of is opened again (a slowloris tool's pace)
    while time.monotonic() < stop:
        now = time.monotonic()
        while reopen and reopen[0] <= now:
            reopen.pop(0)
            open_one()
        for key in list(selector.get_map().values()):
            s, state = key.fileobj, key.data
            if now >= state["next"]:
                try:
                    s.send(head if state["sent"] == 0 else b"a")
                    state["sent"] += 1
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    selector.unregister(s)
                    s.close()
                    cut += 1
                    reopen.append(now + 0.2)
                    continue
                state["next"] = now + 0.5
        for key, _ in selector.select(timeout=0.05):
            s = key.fileobj
            try:
                chunk = s.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                chunk = b""
            # An answer (408, 503) or a close: the box let go of it; the flood opens another.
            selector.unregister(s)
            s.close()
            cut += 1
            reopen.append(time.monotonic() + 0.2)
    asker.join(timeout=10)
    for key in list(selector.get_map().values()):
        key.fileobj.close()
    latencies = sorted(good["latencies"])
    p = lambda q: round(latencies[min(len(latencies) - 1, int(len(latencies) * q))], 1) if latencies else None
    print("OK " + json.dumps({"good": good["statuses"], "asked": len(latencies), "p50_ms": p(0.5), "p99_ms": p(0.99),
                              "max_ms": round(latencies[-1], 1) if latencies else None,
                              "flood_opened": opened, "flood_cut": cut}), flush=True)
    return set(good["statuses"]) == {"200"}


if mode == "connections":
    ok = connections(int(sys.argv[3]))
elif mode == "slowloris":
    options = len(sys.argv) > 5 and sys.argv[5] == "options"
    ok = slowloris(float(sys.argv[3]), int(sys.argv[4]),
                   b"OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n" if options else b"GET /server-info HTTP/1.1\r\nHost: box\r\n\r\n")
else:
    ok = flood(float(sys.argv[3]))
sys.exit(0 if ok else 1)
