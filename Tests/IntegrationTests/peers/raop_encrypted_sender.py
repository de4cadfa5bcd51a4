#!/usr/bin/env python3
"""An encrypting RAOP sender for tests, written on Python's `cryptography` package.

Usage: raop_encrypted_sender.py HOST PORT RAW_OUTPUT_PATH
Checks the receiver's Apple-Response to an Apple-Challenge against the AirPort public key,
streams 2 s of a known L16 signal encrypted as RAOP senders do (RSA-OAEP-wrapped AES-128 key,
AES-CBC per packet with the IV reset, the tail past the last whole block in clear), then
compares what the receiver wrote to its raw output. Prints "OK {json}" or "FAIL reason".
"""
import base64, json, math, os, socket, struct, sys, time
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

AIRPORT_PUBLIC_KEY = b"""-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA59dE8qLieItsH1WgjrcF
RKj6eUWqi+bGLOX1HL3U3GhC/j0Qg90u3sG/1CUtwC5vOYvfDmFI6oSFXi5ELabW
JmT2dKHzBJKa3k9ok+8t9ucRqMd6DZHJ2YCCLlDRKSKv6kDqnw4UwPdpOMXziC/A
Mj3Z/lUVX1G7WSHCAWKf1zNS1eLvqr+boEjXuBOitnZ/bDzPHrTOZz0Dew0uowxf
/+sG+NCK3eQJVxqcaJ/vEHKIVd2M+5qL71yJQ+87X6oV3eaYvt3zWZYD6z5vYTcr
tij2VZ9Zmni/UAaHqn9JdsBWLUEpVviYnhimNVvYFZeCXg/IdTQ+x4IRdiXNv5hE
ewIDAQAB
-----END PUBLIC KEY-----"""
FRAMES = 351  # 1404 bytes: 87 whole AES blocks and a 12-byte clear tail.


def fail(reason):
    print("FAIL " + reason)
    sys.exit(1)


def compare_output(raw_path, sent, tolerance=0):
    """Finds `sent` (interleaved stereo samples) in the receiver's raw S16LE output, aligned on
    the frame 100 ms in, and returns (share of frames after that point matching within
    `tolerance`, offset in samples). Fails when the share is below 99.9 %."""
    with open(raw_path, "rb") as f:
        data = f.read()
    received = list(struct.unpack(f"<{len(data) // 2}h", data[: len(data) // 2 * 2]))

    def close(a, b):
        return all(abs(x - y) <= tolerance for x, y in zip(a, b))

    probe = sent[2 * 4410: 2 * 4410 + 20]
    offset = next((k for k in range(0, len(received) - 20, 2) if close(received[k:k + 20], probe)), None)
    if offset is None:
        fail(f"the sent signal is not in the output ({len(received) // 2} frames received)")
    base = offset - 2 * 4410
    equal = sum(1 for i in range(4410, len(sent) // 2)
                if 0 <= base + 2 * i + 1 < len(received) and close(received[base + 2 * i:base + 2 * i + 2], sent[2 * i:2 * i + 2]))
    share = equal / (len(sent) // 2 - 4410)
    if share < 0.999:
        fail(f"only {share:.4f} of the frames match")
    return share, base


def start_session(sock, sdp, cseq, with_control_port=False):
    """ANNOUNCE `sdp`, SETUP with a local UDP control/timing port, RECORD (CSeq from `cseq` on).
    Returns the receiver's audio port and the control socket (kept open for the session), and
    the receiver's control port when asked."""
    status, _ = request(sock, "ANNOUNCE", cseq, {"Content-Type": "application/sdp"}, sdp.encode())
    if status != 200:
        fail(f"ANNOUNCE answered {status}")
    control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    control.bind(("127.0.0.1", 0))
    port = control.getsockname()[1]
    status, fields = request(sock, "SETUP", cseq + 1,
                             {"Transport": f"RTP/AVP/UDP;unicast;mode=record;control_port={port};timing_port={port}"})
    if status != 200:
        fail(f"SETUP answered {status}")
    ports = dict(p.split("=") for p in fields["transport"].split(";") if "=" in p)
    request(sock, "RECORD", cseq + 2)
    if with_control_port:
        return int(ports["server_port"]), control, int(ports["control_port"])
    return int(ports["server_port"]), control


def request(sock, method, cseq, headers=None, body=b""):
    lines = [f"{method} rtsp://127.0.0.1/1 RTSP/1.0", f"CSeq: {cseq}"] + [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines.append(f"Content-Length: {len(body)}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            fail(f"connection closed after {method}")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    fields = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    length = int(fields.get("content-length", "0"))
    while len(rest) < length:
        rest += sock.recv(65536)
    return int(lines[0].split()[1]), fields


def main():
    host, port, raw_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    public = serialization.load_pem_public_key(AIRPORT_PUBLIC_KEY)
    sock = socket.create_connection((host, port), timeout=10)

    # 1. Apple-Challenge: the response must be our challenge + the receiver's IP + its device id.
    challenge = os.urandom(16)
    status, fields = request(sock, "OPTIONS", 1, {"Apple-Challenge": base64.b64encode(challenge).decode().rstrip("=")})
    if status != 200 or "apple-response" not in fields:
        fail(f"OPTIONS answered {status} without Apple-Response")
    signature = base64.b64decode(fields["apple-response"] + "=" * (-len(fields["apple-response"]) % 4))
    signed = public.recover_data_from_signature(signature, padding.PKCS1v15(), None)
    ip = socket.inet_aton(sock.getsockname()[0])
    if not signed.startswith(challenge + ip) or len(signed) != 32:
        fail("Apple-Response does not sign challenge + address + device id")
    device_id = signed[20:26]

    # 2. ANNOUNCE an encrypted L16 stream.
    key, iv = os.urandom(16), os.urandom(16)
    wrapped = public.encrypt(key, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None))
    sdp = ("v=0\r\no=iTunes 1 0 IN IP4 127.0.0.1\r\ns=iTunes\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
           "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 L16/44100/2\r\n"
           f"a=rsaaeskey:{base64.b64encode(wrapped).decode().rstrip('=')}\r\n"
           f"a=aesiv:{base64.b64encode(iv).decode().rstrip('=')}\r\n")
    server_port, control = start_session(sock, sdp, 2)

    # 3. Two seconds of a swept signal, encrypted per packet, sent in real time.
    audio = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = []
    start = time.monotonic()
    for n in range(2 * 44100 // FRAMES):
        frames = []
        for i in range(FRAMES):
            t = (n * FRAMES + i) / 44100
            # Slow sweeps, so no stretch of the signal repeats and the alignment is unique.
            frames += [int(12000 * math.sin(2 * math.pi * (440 + 50 * t) * t)), int(9000 * math.sin(2 * math.pi * (660 - 40 * t) * t))]
        sent += frames
        clear = struct.pack(f">{len(frames)}h", *frames)
        whole = len(clear) // 16 * 16
        encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        payload = encryptor.update(clear[:whole]) + encryptor.finalize() + clear[whole:]
        header = struct.pack(">BBHII", 0x80, 0xE0 if n == 0 else 0x60, n, n * FRAMES, 0x12345678)
        audio.sendto(header + payload, ("127.0.0.1", server_port))
        delay = start + (n + 1) * FRAMES / 44100 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    time.sleep(1.0)
    request(sock, "TEARDOWN", 5)
    time.sleep(0.3)

    # 4. The receiver's raw output must hold exactly what was sent.
    share, base = compare_output(raw_path, sent)
    print("OK " + json.dumps({"device_id": device_id.hex(), "bit_exact": share, "offset_frames": base // 2}))


if __name__ == "__main__":
    main()
