#!/usr/bin/env python3
"""Two HTTP servers for the URL-policy test.

  url_policy_servers.py origin ADDRESS PORT SECRET_BASE   a media origin a sender names
  url_policy_servers.py secret ADDRESS PORT LOG           a service on the box's loopback

The origin is hostile: it redirects to the secret service, and serves playlists whose segments,
maps and keys live there. The secret service logs every request it gets (one path a line):
with video_refuse_local_urls, that log must stay empty. Prints the port it listens on."""
import http.server, socketserver, sys

mode, address, port, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]


class Origin(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        secret = extra
        if self.path.startswith("/redirect"):
            suffix = self.path.rsplit(".", 1)[-1]
            self.send_response(302)
            self.send_header("Location", f"{secret}/secret-redirected.{suffix}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        bodies = {
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
