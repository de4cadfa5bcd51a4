#!/usr/bin/env python3
"""Test vectors for AirPlay 2 realtime audio packets and event-channel frames
(Protocol/vectors/airplay2-audio.json).

A realtime packet (stream type 96) is a 12-byte RTP header, the audio sealed with
ChaCha20-Poly1305 under the stream key `shk` from SETUP, the 16-byte tag, then an 8-byte
nonce trailer. The nonce is 4 zero bytes followed by the trailer; the AAD is the header's
bytes 4..12 (RTP timestamp and SSRC). Every secret here is fixed:
fixed(label, n) = SHA-512("swift-airplay test vector: " + label)[:n].

The event channel (the TCP connection a sender opens to SETUP's `eventPort`) uses HAP's
frames: a 2-byte little-endian length, the text sealed with ChaCha20-Poly1305 (nonce = 4 zero
bytes and a 64-bit little-endian frame counter per direction, AAD = the length bytes), the
tag. Its keys are HKDF-SHA-512 of the pairing's shared secret with salt "Events-Salt"; the
receiver writes with "Events-Write-Encryption-Key".

Computed with Python's `cryptography` (ChaCha20Poly1305, HKDF). Usage: make_airplay2_vectors.py [OUT]
"""
import hashlib
import json
import struct
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def fixed(label: str, n: int) -> bytes:
    return hashlib.sha512(("swift-airplay test vector: " + label).encode()).digest()[:n]


def packet(shk: bytes, sequence: int, timestamp: int, ssrc: int, payload: bytes, counter: int, marker: bool = False) -> dict:
    header = bytes([0x80, (0x80 if marker else 0) | 0x60]) + struct.pack(">HII", sequence, timestamp, ssrc)
    trailer = struct.pack("<Q", counter)
    nonce = b"\x00" * 4 + trailer
    sealed = ChaCha20Poly1305(shk).encrypt(nonce, payload, header[4:12])
    return {
        "sequence": sequence, "timestamp": timestamp, "ssrc": ssrc, "counter": counter,
        "header": header.hex(), "aad": header[4:12].hex(), "nonce": nonce.hex(),
        "payload": payload.hex(), "packet": (header + sealed + trailer).hex(),
    }


def hkdf(secret: bytes, salt: str, info: str) -> bytes:
    return HKDF(algorithm=hashes.SHA512(), length=32, salt=salt.encode(), info=info.encode()).derive(secret)


def frame(key: bytes, counter: int, text: bytes) -> dict:
    length = struct.pack("<H", len(text))
    sealed = ChaCha20Poly1305(key).encrypt(b"\x00" * 4 + struct.pack("<Q", counter), text, length)
    return {"counter": counter, "text": text.decode(), "frame": (length + sealed).hex()}


def events() -> dict:
    secret = fixed("airplay2 event channel secret", 64)
    write = hkdf(secret, "Events-Salt", "Events-Write-Encryption-Key")
    read = hkdf(secret, "Events-Salt", "Events-Read-Encryption-Key")
    command = b"POST /command RTSP/1.0\r\nContent-Length: 0\r\n\r\n"
    answer = b"RTSP/1.0 200 OK\r\nContent-Length: 0\r\nAudio-Latency: 0\r\n\r\n"
    return {
        "sharedSecret": secret.hex(), "receiverWrites": write.hex(), "senderWrites": read.hex(),
        "receiverFrames": [frame(write, 0, command), frame(write, 1, command)],
        "senderFrames": [frame(read, 0, answer)],
    }


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "airplay2-audio.json"
    shk = fixed("airplay2 shk", 32)
    pcm = bytes(range(256)) * 5 + bytes(128)  # 1408 bytes: 352 frames of 16-bit stereo
    vectors = {
        "meta": {"generator": "tools/lib/make_airplay2_vectors.py", "layout":
                 "RTP header (12) | ChaCha20-Poly1305(shk, nonce = 00000000 | trailer, AAD = header[4:12]) ciphertext | tag (16) | trailer (8, LE counter)"},
        "shk": shk.hex(),
        "packets": [
            packet(shk, 1000, 352000, 0x12345678, pcm, 0, marker=True),
            packet(shk, 1001, 352352, 0x12345678, pcm[::-1], 1),
            packet(shk, 65535, 0xFFFFFF00, 0x12345678, b"\x01\x02\x03", 0x0102030405060708),
        ],
        "events": events(),
    }
    with open(out, "w") as handle:
        json.dump(vectors, handle, indent=1)
        handle.write("\n")


main()
