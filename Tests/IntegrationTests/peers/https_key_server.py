#!/usr/bin/env python3
"""An HTTPS server for encrypted-HLS tests: serves files from a folder, and the ones under
/keys/ only to requests that carry the right cookie, as a content provider's key server does.

Usage: https_key_server.py DIRECTORY CERT.pem KEY.pem COOKIE
Prints the port once listening. Every request is logged to DIRECTORY/https-requests.log as
"PATH STATUS". Requests for /keys/… without "Cookie: COOKIE" get 403.
"""
import http.server, os, socketserver, ssl, sys

root, cert, key, cookie = sys.argv[1:5]


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=root, **kwargs)

    def log_message(self, *args):
        pass

    def log(self, status):
        with open(os.path.join(root, "https-requests.log"), "a") as log:
            log.write(f"{self.path} {status}\n")

    def do_GET(self):
        if self.path.startswith("/keys/"):
            cookies = [c.strip() for c in self.headers.get("Cookie", "").split(";")]
            if cookie not in cookies:
                self.log(403)
                self.send_error(403, "a session cookie is needed for keys")
                return
        self.log(200)
        super().do_GET()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
