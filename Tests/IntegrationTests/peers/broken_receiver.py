#!/usr/bin/env python3
"""A receiver that gets the protocol wrong on purpose, for testing `airplay conformance`.

  broken_receiver.py PORT [silent-udp]

It answers every request 200 (unknown paths and garbage included) with CSeq 1 whatever was
asked, lists only OPTIONS in Public, answers /info with text that is no plist, SETUP without a
Transport, and reads heads of any size. With silent-udp its RTSP session is sound (CSeq echoed,
SETUP names UDP ports) but nothing happens on UDP: it never asks for the time nor for a missing
packet. Prints the port it listens on."""
import socket, socketserver, sys

silent_udp = len(sys.argv) > 2 and sys.argv[2] == "silent-udp"
# Bound, never read: the ports SETUP names in silent-udp mode.
udp = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for s in udp:
    s.bind(("127.0.0.1", 0))


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        # Longer than the UDP checks (4 s + 6 s) keep the session connection idle.
        self.request.settimeout(30)
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
            cseq = next((line.split(":", 1)[1].strip() for line in lines[1:] if line.lower().startswith("cseq:")), "1")
            headers = [f"CSeq: {cseq if silent_udp else 1}"]
            body = b""
            if method == "OPTIONS":
                headers.append("Public: OPTIONS")
            elif target == "/info":
                body = b"features are many"
            elif method == "SETUP":
                headers.append("Session: 1")
                if silent_udp:
                    audio, control = (s.getsockname()[1] for s in udp)
                    headers.append(f"Transport: RTP/AVP/UDP;unicast;mode=record;server_port={audio};control_port={control};timing_port={control}")
            reply = f"{version} 200 OK\r\n" + "".join(h + "\r\n" for h in headers) + f"Content-Length: {len(body)}\r\n\r\n"
            self.request.sendall(reply.encode() + body)


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", int(sys.argv[1])), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
