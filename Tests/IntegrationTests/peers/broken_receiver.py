#!/usr/bin/env python3
"""A receiver that gets the protocol wrong on purpose, for testing `airplay conformance`.

  broken_receiver.py PORT

It answers every request 200 (unknown paths and garbage included) with CSeq 1 whatever was
asked, lists only OPTIONS in Public, answers /info with text that is no plist, SETUP without a
Transport, and reads heads of any size. Prints the port it listens on."""
import socket, socketserver, sys


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        self.request.settimeout(10)
        while True:
            while b"\r\n\r\n" not in data:
                try:
                    chunk = self.request.recv(65536)
                except (socket.timeout, ConnectionError):
                    return
                if not chunk:
                    return
                data += chunk
            head, data = data.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            while len(data) < length:
                chunk = self.request.recv(65536)
                if not chunk:
                    return
                data += chunk
            data = data[length:]
            parts = lines[0].split(" ")
            method, target = parts[0], parts[1] if len(parts) > 1 else ""
            version = "HTTP/1.1" if lines[0].endswith("HTTP/1.1") else "RTSP/1.0"
            headers = ["CSeq: 1"]
            body = b""
            if method == "OPTIONS":
                headers.append("Public: OPTIONS")
            elif target == "/info":
                body = b"features are many"
            elif method == "SETUP":
                headers.append("Session: 1")
            reply = f"{version} 200 OK\r\n" + "".join(h + "\r\n" for h in headers) + f"Content-Length: {len(body)}\r\n\r\n"
            self.request.sendall(reply.encode() + body)


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", int(sys.argv[1])), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
