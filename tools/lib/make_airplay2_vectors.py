#!/usr/bin/env python3
"""Test vectors for AirPlay 2 realtime audio packets (Protocol/vectors/airplay2-audio.json).

A realtime packet (stream type 96) is a 12-byte RTP header, the audio sealed with
ChaCha20-Poly1305 under the stream key `shk` from SETUP, the 16-byte tag, then an 8-byte
nonce trailer. The nonce is 4 zero bytes followed by the trailer; the AAD is the header's
bytes 4..12 (RTP timestamp and SSRC). Every secret here is fixed:
fixed(label, n) = SHA-512("swift-airplay test vector: " + label)[:n].

Computed with Python's `cryptography` (ChaCha20Poly1305). Usage: make_airplay2_vectors.py [OUT]
"""
import hashlib
import json
import struct
import sys

from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305


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
    }
    with open(out, "w") as handle:
        json.dump(vectors, handle, indent=1)
        handle.write("\n")


main()
