#!/usr/bin/env python3
"""A threaded static file server with single byte ranges, as real media servers have.

Usage: range_server.py DIRECTORY [PORT]   (PORT 0 or absent: any free port; the port is printed)
Used by the integration tests and the benchmarks to serve ffmpeg-made media over loopback.
With RANGE_SERVER_LOG=FILE set, every request's path is appended to FILE, one per line.
With RANGE_SERVER_RATE=BYTES_PER_SECOND set, bodies are sent no faster than that (a slow link).
"""
import http.server, os, re, socketserver, sys, time
root = sys.argv[1]
port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_message(self, *a):
        pass
    def send_head(self):
        if os.environ.get("RANGE_SERVER_LOG"):
            with open(os.environ["RANGE_SERVER_LOG"], "a") as log:
                log.write(self.path + "\n")
        path = self.translate_path(self.path)
        match = re.match(r"bytes=(\d*)-(\d*)$", self.headers.get("Range", ""))
        if not match or not os.path.isfile(path):
            return super().send_head()
        size = os.path.getsize(path)
        start = int(match.group(1) or 0)
        end = min(int(match.group(2)) if match.group(2) else size - 1, size - 1)
        if start >= size:
            self.send_error(416)
            return None
        f = open(path, "rb")
        f.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self.range_left = end - start + 1
        return f
    def copyfile(self, source, output):
        left = getattr(self, "range_left", None)
        rate = float(os.environ.get("RANGE_SERVER_RATE", "0"))
        if rate > 0:
            # A slow link: 16 KiB at a time, paced to the rate.
            started, sent = time.monotonic(), 0
            while left is None or left > 0:
                chunk = source.read(16384 if left is None else min(16384, left))
                if not chunk:
                    break
                output.write(chunk)
                sent += len(chunk)
                if left is not None:
                    left -= len(chunk)
                wait = sent / rate - (time.monotonic() - started)
                if wait > 0:
                    time.sleep(wait)
            return
        if left is None:
            return super().copyfile(source, output)
        while left > 0:
            chunk = source.read(min(65536, left))
            if not chunk:
                break
            output.write(chunk)
            left -= len(chunk)
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
server = Server(("127.0.0.1", port), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
