#!/usr/bin/env python3
"""Two HTTP servers for the URL-policy test.

  url_policy_servers.py origin ADDRESS PORT SECRET_BASE [MEDIA_DIR LOG]   a media origin a sender names
  url_policy_servers.py secret ADDRESS PORT LOG                          a service on the box's loopback

The origin is hostile: it redirects to the secret service, and serves playlists whose segments,
maps and keys live there; /bounce.m3u8 lists a segment on the origin itself that redirects
there. It is honest too: /media/PATH serves MEDIA_DIR/PATH (with single byte ranges) and
/moved/PATH redirects to /media/PATH; with LOG it logs "PATH USER-AGENT" a line. The secret
service logs every request it gets (one path a line): with video_refuse_local_urls, that log
must stay empty. Prints the port it listens on."""
import http.server, os, re, socketserver, sys

mode, address, port, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
media_dir = sys.argv[5] if len(sys.argv) > 5 else None
origin_log = sys.argv[6] if len(sys.argv) > 6 else None


class Origin(http.server.BaseHTTPRequestHandler):
    def redirect(self, location):
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def serve_media(self, relative):
        path = os.path.realpath(os.path.join(media_dir or "/nonexistent", relative))
        if not media_dir or not path.startswith(os.path.realpath(media_dir) + "/") or not os.path.isfile(path):
            self.send_error(404)
            return
        with open(path, "rb") as f:
            data = f.read()
        status, match = 200, re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if match:
            first = int(match.group(1))
            last = min(int(match.group(2)) if match.group(2) else len(data) - 1, len(data) - 1)
            status, total, data = 206, len(data), data[first:last + 1]
        self.send_response(status)
        if status == 206:
            self.send_header("Content-Range", f"bytes {first}-{last}/{total}")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        secret = extra
        if origin_log:
            with open(origin_log, "a") as log:
                log.write(f"{self.path} {self.headers.get('User-Agent', '-')}\n")
        if self.path.startswith("/media/"):
            self.serve_media(self.path[len("/media/"):])
            return
        if self.path.startswith("/moved/"):
            self.redirect("/media/" + self.path[len("/moved/"):])
            return
        if self.path.startswith("/redirect"):
            suffix = self.path.rsplit(".", 1)[-1]
            self.send_response(302)
            self.send_header("Location", f"{secret}/secret-redirected.{suffix}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        bodies = {
            "/bounce.m3u8": "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nredirect-segment.ts\n#EXT-X-ENDLIST\n",
            "/rewrite.m3u8": f"#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n{secret}/secret-segment.ts\n#EXT-X-ENDLIST\n",
            "/keyed.m3u8": f'#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI="{secret}/secret.key"\n'
                           "#EXTINF:2.0,\nsegment.ts\n#EXT-X-ENDLIST\n",
            "/master.m3u8": '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360,CODECS="avc1.42e01e,mp4a.40.2"\n'
                            f"{secret}/secret-variant.m3u8\n",
        }
        body = bodies.get(self.path)
        if body is None:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.apple.mpegurl")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Secret(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(extra, "a") as log:
            log.write(self.path + "\n")
        data = b"#EXTM3U\n" if self.path.endswith(".m3u8") else b"\0" * 188
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server((address, port), Origin if mode == "origin" else Secret)
print(server.server_address[1], flush=True)
server.serve_forever()
