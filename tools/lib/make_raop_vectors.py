#!/usr/bin/env python3
"""Writes the RAOP test vectors in Protocol/vectors/ (raop-*.json) and checks each one on the way.

Usage: .venv-peers/bin/python tools/lib/make_raop_vectors.py [--check-only]

Needs the `cryptography` package (in .venv-peers), ffmpeg (ALAC encoder) and, for the ALAC decoding
check, libgstreamer with avdec_alac (gstreamer1.0-libav), driven through ctypes; openssl(1), when
present, re-makes the Apple-Response signatures with the call the receiver makes. The output is
the same on every run (ffmpeg's ALAC encoder is deterministic for one build; another ffmpeg version
may encode the packets differently, but they still decode to the same PCM).

What is made, and how it is checked before it is written:
- raop-apple-response.json: PKCS#1 v1.5 type-1 signatures computed here with the AirPort key
  (read from Sources/AirPlayCrypto/AirPortKey.swift), recovered with the public key by
  `cryptography`, and re-signed by `openssl pkeyutl` for comparison.
- raop-aes-packets.json: AES-128-CBC over the whole blocks, tail in clear; decrypted back. The
  RSA-OAEP (SHA-1) key wrap is done here with a fixed seed (so the file is stable) and unwrapped
  by `cryptography`.
- raop-alac-frames.json: PCM made here, each 352-frame packet encoded on its own by ffmpeg into an
  .m4a (decoded back by ffmpeg), taken from the MP4 sample table, its partial-frame count removed
  (see alac_vectors), then decoded by GStreamer's avdec_alac packet by packet with the magic cookie
  built from the iTunes-style fmtp, the way airplayd's GStreamerAudioDecoder does.
- raop-dmap.json, raop-sdp.json, raop-packets.json: bytes and texts built here; the expected
  results are written by hand below and checked against small Python models of the Swift parsers.
"""
import base64
import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import wave

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "Protocol", "vectors")
GENERATOR = "tools/lib/make_raop_vectors.py"


# ----------------------------------------------------------------------------- helpers

def stream(label, length):
    """Deterministic bytes: SHA-256 in counter mode over a label."""
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha256(f"{label}/{counter}".encode()).digest()
        counter += 1
    return out[:length]


def b64(data, pad=True):
    text = base64.b64encode(data).decode()
    return text if pad else text.rstrip("=")


def unb64(text):
    text = text.strip().rstrip("=")
    return base64.b64decode(text + "=" * (-len(text) % 4))


def check(condition, what):
    if not condition:
        sys.exit("vector check failed: " + what)


def write(name, document):
    path = os.path.join(OUT, name)
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    check(len(text.encode()) < 60_000, f"{name} is {len(text.encode())} bytes, over 60 KB")
    json.loads(text)
    if "--check-only" not in sys.argv:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    print(f"{name}: {len(text.encode())} bytes")


def airport_key():
    """The AirPort private key, from the PEM in the Swift source (one copy of the key in the repo)."""
    source = open(os.path.join(ROOT, "Sources", "AirPlayCrypto", "AirPortKey.swift"), encoding="utf-8").read()
    begin = source.index("-----BEGIN RSA PRIVATE KEY-----")
    end = source.index("-----END RSA PRIVATE KEY-----") + len("-----END RSA PRIVATE KEY-----")
    pem = "\n".join(line.strip() for line in source[begin:end].splitlines()) + "\n"
    return pem, serialization.load_pem_private_key(pem.encode(), password=None)


# ----------------------------------------------------------------------------- Apple-Response

def signed_message(challenge, address, device_id):
    message = challenge + address + device_id
    return message + b"\0" * max(0, 32 - len(message))


def pkcs1_type1_sign(key, message):
    """RSA PKCS#1 v1.5 signature of the raw message (no DigestInfo): 00 01 FF.. 00 message, ^d mod n."""
    numbers = key.private_numbers()
    size = (numbers.public_numbers.n.bit_length() + 7) // 8
    check(len(message) <= size - 11, "message too long for PKCS#1 type 1")
    block = b"\x00\x01" + b"\xff" * (size - 3 - len(message)) + b"\x00" + message
    signature = pow(int.from_bytes(block, "big"), numbers.d, numbers.public_numbers.n).to_bytes(size, "big")
    recovered = key.public_key().recover_data_from_signature(signature, padding.PKCS1v15(), None)
    check(recovered == message, "signature does not recover the message")
    return signature


def openssl_sign(pem, message):
    """The same signature through `openssl pkeyutl -sign` (EVP_PKEY_sign, PKCS#1 padding, no digest)."""
    if not shutil.which("openssl"):
        return None
    with tempfile.TemporaryDirectory() as work:
        key_path, in_path = os.path.join(work, "key.pem"), os.path.join(work, "in.bin")
        open(key_path, "w").write(pem)
        open(in_path, "wb").write(message)
        result = subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", key_path, "-in", in_path,
                                 "-pkeyopt", "rsa_padding_mode:pkcs1"], capture_output=True)
        return result.stdout if result.returncode == 0 else None


def apple_response_vectors(pem, key):
    device_a = bytes.fromhex("02FC00000001")
    device_b = bytes.fromhex("5855CA1AE288")
    cases = [
        ("iTunes-style: 16-byte challenge sent without base64 padding, IPv4 connection; 16 + 4 + 6 = 26 bytes, "
         "zero-padded to 32 before signing",
         bytes(range(16)), False, "127.0.0.1", bytes([127, 0, 0, 1]), device_a),
        ("the same challenge with its '==' padding: the padding is optional, the response is the same",
         bytes(range(16)), True, "127.0.0.1", bytes([127, 0, 0, 1]), device_a),
        ("another challenge on a LAN address with a real-looking device id",
         stream("challenge/lan", 16), False, "192.168.1.20", bytes([192, 168, 1, 20]), device_b),
        ("IPv4 reached through a dual-stack socket (::ffff:10.0.0.5): the 4-byte IPv4 address is signed, not 16 bytes",
         stream("challenge/mapped", 16), False, "::ffff:10.0.0.5", bytes([10, 0, 0, 5]), device_b),
        ("IPv6 link-local connection: 16 + 16 + 6 = 38 bytes, longer than 32, so no zero padding",
         stream("challenge/ipv6", 16), True, "fe80::1c2d:3eff:fe4f:5a6b",
         bytes.fromhex("fe800000000000001c2d3efffe4f5a6b"), device_b),
        ("IPv6 loopback ::1",
         stream("challenge/ipv6-loopback", 16), False, "::1", bytes(15) + b"\x01", device_a),
    ]
    vectors = []
    for what, challenge, padded, address_text, address, device_id in cases:
        message = signed_message(challenge, address, device_id)
        signature = pkcs1_type1_sign(key, message)
        via_openssl = openssl_sign(pem, message)
        if via_openssl is not None:
            check(via_openssl == signature, f"openssl disagrees on {what}")
        challenge_text = b64(challenge, pad=padded)
        check(unb64(challenge_text) == challenge, "challenge base64")
        vectors.append({
            "what": what,
            "challenge": challenge_text,
            "localAddressText": address_text,
            "localAddress": address.hex(),
            "deviceId": device_id.hex(),
            "signedMessage": message.hex(),
            "appleResponse": b64(signature, pad=False),
        })
    refused = [
        {"what": "not base64", "challenge": "???", "localAddress": "7f000001", "deviceId": device_a.hex()},
        {"what": "empty", "challenge": "", "localAddress": "7f000001", "deviceId": device_a.hex()},
        {"what": "more than 32 bytes of challenge (33)", "challenge": b64(stream("challenge/long", 33), pad=False),
         "localAddress": "7f000001", "deviceId": device_a.hex()},
    ]
    return {
        "what": "Apple-Challenge -> Apple-Response. The receiver signs challenge bytes + its IP address on the "
                "RTSP connection (4 bytes for IPv4, also IPv4-mapped; 16 for IPv6) + its 6-byte device id, "
                "zero-padded to 32 bytes when shorter, with the AirPort RSA key (2048 bits) as a PKCS#1 v1.5 "
                "type-1 signature without a digest (OpenSSL EVP_PKEY_sign, RSA_PKCS1_PADDING, no md). The "
                "signature is deterministic. It is sent as base64 without '=' padding (342 characters). Senders "
                "check it by recovering signedMessage with the AirPort public key. Fields are hex except "
                "challenge and appleResponse (base64).",
        "generator": GENERATOR,
        "vectors": vectors,
        "refused": refused,
    }


# ----------------------------------------------------------------------------- AES + OAEP

def mgf1_sha1(seed, length):
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha1(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def oaep_sha1_wrap(public_key, message, seed):
    """RSAES-OAEP (SHA-1, MGF1-SHA-1, empty label) with a fixed seed, so the vector is stable."""
    numbers = public_key.public_numbers()
    size = (numbers.n.bit_length() + 7) // 8
    label_hash = hashlib.sha1(b"").digest()
    block = label_hash + b"\0" * (size - len(message) - 2 * 20 - 2) + b"\x01" + message
    masked_block = bytes(a ^ b for a, b in zip(block, mgf1_sha1(seed, size - 20 - 1)))
    masked_seed = bytes(a ^ b for a, b in zip(seed, mgf1_sha1(masked_block, 20)))
    encoded = b"\0" + masked_seed + masked_block
    return pow(int.from_bytes(encoded, "big"), numbers.e, numbers.n).to_bytes(size, "big")


def oaep_unwrap(key, wrapped):
    return key.decrypt(wrapped, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None))


def raop_encrypt(key, iv, plain):
    whole = len(plain) & ~15
    if whole == 0:
        return plain
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return encryptor.update(plain[:whole]) + encryptor.finalize() + plain[whole:]


def raop_decrypt(key, iv, payload):
    whole = len(payload) & ~15
    if whole == 0:
        return payload
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    return decryptor.update(payload[:whole]) + decryptor.finalize() + payload[whole:]


def l16_sine(frames, start=0):
    """Big-endian L16 stereo as RAOP carries it: 440 Hz left, 660 Hz right."""
    out = b""
    for n in range(start, start + frames):
        left = round(9000 * math.sin(2 * math.pi * 440 * n / 44100))
        right = round(9000 * math.sin(2 * math.pi * 660 * n / 44100))
        out += struct.pack(">hh", left, right)
    return out


STREAM_KEY = bytes.fromhex("8a4b31e67f0c2d95b1d3e5a7c9f01234")
STREAM_IV = bytes.fromhex("cdc666019b6a87bb86704c0f5e4d1078")


def aes_vectors(key):
    packet_1408 = l16_sine(352)
    plaintexts = [
        ("352 frames of L16 stereo (1408 bytes = 88 whole blocks, no tail), the usual packet", packet_1408),
        ("1411 bytes: the same 1408 bytes plus a 3-byte tail that stays in clear. Its first 1408 bytes of "
         "ciphertext equal the 1408-byte packet's: the IV is reset for every packet", packet_1408 + b"\x01\x02\x03"),
        ("351 frames (1404 bytes = 87 whole blocks + a 12-byte clear tail), as the encrypted-sender CI test sends",
         l16_sine(351, start=352)),
        ("exactly one block", b"one AES block!!!"),
        ("7 bytes: shorter than a block, so nothing is encrypted", bytes([1, 2, 3, 4, 5, 6, 7])),
        ("empty payload", b""),
    ]
    packets = []
    for what, plain in plaintexts:
        cipher = raop_encrypt(STREAM_KEY, STREAM_IV, plain)
        check(raop_decrypt(STREAM_KEY, STREAM_IV, cipher) == plain, "AES round trip")
        check(len(cipher) == len(plain), "AES keeps the length")
        packets.append({"what": what, "length": len(plain), "plaintext": plain.hex(), "ciphertext": cipher.hex()})
    check(packets[1]["ciphertext"][:2816] == packets[0]["ciphertext"], "IV reset per packet")

    wrapped = oaep_sha1_wrap(key.public_key(), STREAM_KEY, hashlib.sha1(b"raop-vectors/oaep-seed").digest())
    check(oaep_unwrap(key, wrapped) == STREAM_KEY, "OAEP unwrap")
    long_key = stream("aes/24-byte-key", 24)
    wrapped_long = oaep_sha1_wrap(key.public_key(), long_key, hashlib.sha1(b"raop-vectors/oaep-seed-24").digest())
    check(oaep_unwrap(key, wrapped_long) == long_key, "OAEP unwrap 24")
    corrupted = bytearray(wrapped)
    corrupted[100] ^= 0x01
    try:
        oaep_unwrap(key, bytes(corrupted))
        check(False, "a corrupted wrap must not unwrap")
    except ValueError:
        pass
    return {
        "what": "RAOP audio encryption (et=1). ANNOUNCE carries a=rsaaeskey (the 16-byte AES key wrapped with "
                "RSA-OAEP, SHA-1 and MGF1-SHA-1, empty label, under the AirPort public key) and a=aesiv. Each audio "
                "payload is AES-128-CBC over its whole 16-byte blocks with the IV reset for every packet; the bytes "
                "after the last whole block are sent in clear. key, iv, plaintext, ciphertext are hex; rsaaeskey "
                "and aesiv are base64 as they appear in the SDP (the same values as the iTunes vector of "
                "raop-sdp.json). The wrap here uses a fixed OAEP seed so the file is stable; real senders use a "
                "random one, which unwraps the same way.",
        "generator": GENERATOR,
        "key": STREAM_KEY.hex(),
        "iv": STREAM_IV.hex(),
        "packets": packets,
        "keyWrap": {
            "what": "a=rsaaeskey and a=aesiv of an iTunes-style ANNOUNCE; rsaaeskey unwraps to key",
            "rsaaeskey": b64(wrapped),
            "aesiv": b64(STREAM_IV, pad=False),
            "key": STREAM_KEY.hex(),
            "iv": STREAM_IV.hex(),
        },
        "badWraps": [
            {"what": "a valid OAEP wrap of a 24-byte key: refused, RAOP keys are 16 bytes",
             "rsaaeskey": b64(wrapped_long)},
            {"what": "the good wrap with one bit flipped (byte 100): OAEP decoding fails",
             "rsaaeskey": b64(bytes(corrupted))},
            {"what": "3 bytes: not an RSA block", "rsaaeskey": b64(b"\x01\x02\x03")},
        ],
    }


# ----------------------------------------------------------------------------- ALAC

FRAMES = 352
ITUNES_FMTP = [352, 0, 16, 40, 10, 14, 2, 255, 0, 0, 44100]


def alac_input():
    """Five packets of 352 stereo frames, as lists of (left, right)."""
    packets = []
    packets.append(("digital silence", [(0, 0)] * FRAMES))
    state = 0x1234567
    quiet = []
    for _ in range(FRAMES):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        quiet.append(((state >> 8) % 7 - 3, (state >> 16) % 7 - 3))
    packets.append(("near silence: deterministic noise within +-3", quiet))
    start = 2 * FRAMES
    packets.append(("real signal: 440 Hz left, 660 Hz right, amplitude 12000",
                    [(round(12000 * math.sin(2 * math.pi * 440 * n / 44100)),
                      round(12000 * math.sin(2 * math.pi * 660 * n / 44100))) for n in range(start, start + FRAMES)]))
    start = 3 * FRAMES
    loud = []
    for n in range(start, start + FRAMES):
        value = max(-32768, min(32767, round(40000 * math.sin(2 * math.pi * 1000 * n / 44100))))
        loud.append((value, {32767: -32768, -32768: 32767}.get(value, -value)))
    packets.append(("full scale: a 1 kHz sine clipped at -32768 and 32767, the right channel its negation (the "
                    "extremes swapped)", loud))
    state = 0x0BADCAFE
    noise = []
    for _ in range(FRAMES):
        state = (state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        noise.append((struct.unpack("<h", struct.pack("<H", (state >> 24) & 0xFFFF))[0],
                      struct.unpack("<h", struct.pack("<H", (state >> 40) & 0xFFFF))[0]))
    packets.append(("full-range white noise: does not compress, so the encoder sends the frame uncompressed "
                    "(escape flag set)", noise))
    return packets


def pcm_bytes(frames):
    return b"".join(struct.pack("<hh", left, right) for left, right in frames)


def mp4_boxes(data, start, end):
    position = start
    while position + 8 <= end:
        size, kind = struct.unpack(">I4s", data[position:position + 8])
        header = 8
        if size == 1:
            size = struct.unpack(">Q", data[position + 8:position + 16])[0]
            header = 16
        elif size == 0:
            size = end - position
        check(size >= header, "bad MP4 box")
        yield kind, position + header, position + size
        position += size


def mp4_child(data, start, end, kind):
    for name, body, stop in mp4_boxes(data, start, end):
        if name == kind:
            return body, stop
    check(False, f"no {kind!r} box")


def mp4_path(data, path):
    start, end = 0, len(data)
    for kind in path:
        start, end = mp4_child(data, start, end, kind)
    return start, end


def alac_packets_from_m4a(path):
    """(24-byte ALACSpecificConfig, [packet bytes]) from the one audio track's sample table."""
    data = open(path, "rb").read()
    start, end = mp4_path(data, [b"moov", b"trak", b"mdia", b"minf", b"stbl"])
    stsd, _ = mp4_child(data, start, end, b"stsd")
    entry = stsd + 8  # version/flags, entry count
    entry_size, entry_kind = struct.unpack(">I4s", data[entry:entry + 8])
    check(entry_kind == b"alac", "the sample entry is not alac")
    # The audio sample entry has 28 bytes of fields after its header, then child boxes.
    cookie_body, cookie_end = mp4_child(data, entry + 8 + 28, entry + entry_size, b"alac")
    config = data[cookie_body + 4:cookie_end]  # after version/flags
    check(len(config) == 24, "ALACSpecificConfig is 24 bytes")

    stsz, _ = mp4_child(data, start, end, b"stsz")
    uniform, count = struct.unpack(">II", data[stsz + 4:stsz + 12])
    sizes = [uniform] * count if uniform else list(struct.unpack(f">{count}I", data[stsz + 12:stsz + 12 + 4 * count]))
    stsc, _ = mp4_child(data, start, end, b"stsc")
    runs = [struct.unpack(">III", data[stsc + 8 + 12 * i:stsc + 20 + 12 * i])
            for i in range(struct.unpack(">I", data[stsc + 4:stsc + 8])[0])]
    offsets = []
    for kind, fmt, width in ((b"stco", ">I", 4), (b"co64", ">Q", 8)):
        for name, body, _ in mp4_boxes(data, start, end):
            if name == kind:
                chunk_count = struct.unpack(">I", data[body + 4:body + 8])[0]
                offsets = [struct.unpack(fmt, data[body + 8 + width * i:body + 8 + width * (i + 1)])[0]
                           for i in range(chunk_count)]
    check(offsets, "no chunk offsets")
    packets = []
    for chunk, offset in enumerate(offsets):
        per_chunk = [samples for first, samples, _ in runs if first - 1 <= chunk][-1]
        for _ in range(per_chunk):
            if len(packets) == count:
                break
            size = sizes[len(packets)]
            packets.append(data[offset:offset + size])
            offset += size
    check(len(packets) == count, "sample table covers every packet")
    return config, packets


def fmtp_from_config(config):
    return list(struct.unpack(">IBBBBBBHIII", config))


def magic_cookie(fmtp):
    """What GStreamerAudioDecoder.magicCookie builds: an `alac` atom (size 36, tag, version 0) + config."""
    config = struct.pack(">IBBBBBBHIII", *fmtp)
    return struct.pack(">I", 12 + len(config)) + b"alac" + b"\0\0\0\0" + config


def gstreamer_decode(packets, cookie):
    """Decodes the packets the way airplayd's GStreamerAudioDecoder does, through libgstreamer with ctypes:
    the same launch line (appsrc format=time with the alac caps and codec_data, avdec_alac, audioconvert
    without dithering, S16LE interleaved, appsink), one buffer pushed and one pulled per packet. Returns a
    list of the decoded bytes per packet, or None when GStreamer or avdec_alac is missing."""
    import ctypes
    try:
        gst = ctypes.CDLL("libgstreamer-1.0.so.0")
        app = ctypes.CDLL("libgstapp-1.0.so.0")
    except OSError:
        return None
    pointer = ctypes.c_void_p
    gst.gst_init(None, None)
    gst.gst_element_factory_find.restype = pointer
    gst.gst_element_factory_find.argtypes = [ctypes.c_char_p]
    if not gst.gst_element_factory_find(b"avdec_alac"):
        return None
    gst.gst_parse_launch.restype = pointer
    gst.gst_parse_launch.argtypes = [ctypes.c_char_p, ctypes.POINTER(pointer)]
    gst.gst_bin_get_by_name.restype = pointer
    gst.gst_bin_get_by_name.argtypes = [pointer, ctypes.c_char_p]
    gst.gst_element_set_state.argtypes = [pointer, ctypes.c_int]
    gst.gst_buffer_new_allocate.restype = pointer
    gst.gst_buffer_new_allocate.argtypes = [pointer, ctypes.c_size_t, pointer]
    gst.gst_buffer_fill.restype = ctypes.c_size_t
    gst.gst_buffer_fill.argtypes = [pointer, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    gst.gst_buffer_get_sizes_range.restype = ctypes.c_size_t
    gst.gst_buffer_get_sizes_range.argtypes = [pointer, ctypes.c_uint, ctypes.c_int, pointer, pointer]
    gst.gst_buffer_extract.restype = ctypes.c_size_t
    gst.gst_buffer_extract.argtypes = [pointer, ctypes.c_size_t, pointer, ctypes.c_size_t]
    gst.gst_sample_get_buffer.restype = pointer
    gst.gst_sample_get_buffer.argtypes = [pointer]
    gst.gst_mini_object_unref.argtypes = [pointer]
    gst.gst_object_unref.argtypes = [pointer]
    app.gst_app_src_push_buffer.restype = ctypes.c_int
    app.gst_app_src_push_buffer.argtypes = [pointer, pointer]
    app.gst_app_sink_try_pull_sample.restype = pointer
    app.gst_app_sink_try_pull_sample.argtypes = [pointer, ctypes.c_uint64]

    caps = f"audio/x-alac,rate=44100,channels=2,codec_data=(buffer){cookie.hex()}"
    launch = (f"appsrc name=in format=time caps={caps} ! avdec_alac ! audioconvert dithering=none noise-shaping=none "
              "! audio/x-raw,format=S16LE,layout=interleaved ! appsink name=out sync=false")
    error = pointer()
    pipeline = gst.gst_parse_launch(launch.encode(), ctypes.byref(error))
    check(pipeline and not error.value, "the decoding pipeline does not build")
    source, sink = gst.gst_bin_get_by_name(pipeline, b"in"), gst.gst_bin_get_by_name(pipeline, b"out")
    gst.gst_element_set_state(pipeline, 4)  # GST_STATE_PLAYING
    decoded = []
    for packet in packets:
        buffer = gst.gst_buffer_new_allocate(None, len(packet), None)
        gst.gst_buffer_fill(buffer, 0, packet, len(packet))
        check(app.gst_app_src_push_buffer(source, buffer) == 0, "push failed")
        sample = app.gst_app_sink_try_pull_sample(sink, 2_000_000_000)
        if not sample:
            decoded.append(b"")
            continue
        out_buffer = gst.gst_sample_get_buffer(sample)
        size = gst.gst_buffer_get_sizes_range(out_buffer, 0, -1, None, None)
        data = ctypes.create_string_buffer(size)
        gst.gst_buffer_extract(out_buffer, 0, data, size)
        decoded.append(data.raw)
        gst.gst_mini_object_unref(sample)
    gst.gst_element_set_state(pipeline, 1)  # GST_STATE_NULL
    for element in (source, sink, pipeline):
        gst.gst_object_unref(element)
    return decoded


def encode_alone(frames, work, name):
    """ffmpeg's ALAC encoding of just these frames: (ALACSpecificConfig, the one packet)."""
    wav_path, m4a_path = os.path.join(work, name + ".wav"), os.path.join(work, name + ".m4a")
    with wave.open(wav_path, "wb") as output:
        output.setnchannels(2)
        output.setsampwidth(2)
        output.setframerate(44100)
        output.writeframes(pcm_bytes(frames))
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", wav_path, "-c:a", "alac", "-map_metadata", "-1",
                    "-fflags", "+bitexact", "-flags", "+bitexact", m4a_path], check=True)
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-i", m4a_path, "-f", "s16le", "-acodec", "pcm_s16le", "-"],
                             capture_output=True, check=True).stdout
    check(decoded == pcm_bytes(frames), "ffmpeg does not decode its .m4a back to the input")
    config, packets = alac_packets_from_m4a(m4a_path)
    check(len(packets) == 1, f"{len(packets)} packets for {len(frames)} frames")
    return config, packets[0]


def frame_header(packet):
    """(has size, escape, explicit frame count or None) from an ALAC frame's element header: 3 bits element
    type, 4 bits instance tag, 12 unused bits, 1 bit 'has size', 2 bits shift, 1 bit escape, then the 32-bit
    frame count when 'has size' is set."""
    bits = "".join(f"{byte:08b}" for byte in packet)
    has_size, escape = bits[19] == "1", bits[22] == "1"
    return has_size, escape, int(bits[23:55], 2) if has_size else None


def drop_frame_count(packet):
    """The same frame without 'has size' and its 32-bit count: what an encoder whose frame length is the
    packet's frame count writes. The count sits at bit 23; removing 32 bits keeps the byte alignment."""
    bits = "".join(f"{byte:08b}" for byte in packet)
    check(bits[19] == "1", "the frame has no explicit count")
    bits = bits[:19] + "0" + bits[20:23] + bits[55:]
    return int(bits, 2).to_bytes(len(bits) // 8, "big")


def alac_vectors():
    """ffmpeg's ALAC encoder (5.x) always uses a frame length of 4096 and ignores -frame_size, so each
    352-frame packet is encoded on its own: ffmpeg then writes a partial frame (the 'has size' bit and an
    explicit count of 352). Dropping that count gives exactly the frame an iTunes-style encoder with frame
    length 352 sends; the decoders below confirm it decodes to the input."""
    inputs = alac_input()
    tail_frames = alac_input()[2][1][:200]
    vectors, packets = [], []
    with tempfile.TemporaryDirectory() as work:
        for index, (what, frames) in enumerate(inputs):
            config, partial = encode_alone(frames, work, f"packet{index}")
            encoder_fmtp = fmtp_from_config(config)
            check(encoder_fmtp[2] == 16 and encoder_fmtp[3:7] == ITUNES_FMTP[3:7] and encoder_fmtp[10] == 44100,
                  f"encoder config {encoder_fmtp}")
            check(frame_header(partial)[2] == FRAMES, "ffmpeg wrote the count 352")
            packet = drop_frame_count(partial)
            has_size, escape, _ = frame_header(packet)
            check(not has_size, "full frame")
            packets.append(packet)
            vectors.append({"what": what, "frames": len(frames), "uncompressed": escape, "alac": b64(packet),
                            "pcm": b64(pcm_bytes(frames))})
        _, tail = encode_alone(tail_frames, work, "tail")
        check(frame_header(tail)[2] == 200, "tail count")
        packets.append(tail)
        vectors.append({"what": "a short last packet (end of a track): 200 frames of the 440/660 Hz signal, the "
                                "'has size' bit set and the count 200 in the frame header",
                        "frames": 200, "uncompressed": frame_header(tail)[1], "alac": b64(tail),
                        "pcm": b64(pcm_bytes(tail_frames))})
    check(vectors[-2]["uncompressed"] and not vectors[2]["uncompressed"],
          "the noise packet should be an escape frame, the sine compressed")
    cookie = magic_cookie(ITUNES_FMTP)
    via_gstreamer = gstreamer_decode(packets, cookie)
    if via_gstreamer is not None:
        for vector, pcm in zip(vectors, via_gstreamer):
            check(b64(pcm) == vector["pcm"], "avdec_alac with the iTunes-style cookie does not give the pcm of: "
                  + vector["what"] + f" ({len(pcm)} bytes)")
    else:
        print("warning: GStreamer with avdec_alac not found; the decoding cross-check was skipped", file=sys.stderr)
    return {
        "what": "ALAC packets as an AppleLossless RAOP stream carries them: one packet per RTP payload, 352 "
                "frames, 16-bit, stereo, 44100 Hz, each independent of the others. fmtp is the iTunes-style "
                "a=fmtp line (payload type first), fmtpValues its 11 numbers: frame length, compatible version, "
                "bit depth, rice history mult (pb), initial history (mb), rice limit (kb), channels, max run, max "
                "frame bytes, average bit rate, sample rate. magicCookie is the `alac` atom a decoder is given "
                "(size 36, 'alac', version 0, then those fields as a 24-byte big-endian ALACSpecificConfig). "
                "alac and pcm are base64; pcm is what the packet must decode to, S16LE interleaved L,R (ALAC is "
                "lossless: it is the encoder's input). uncompressed tells whether the frame's escape bit is set "
                "(samples stored verbatim). Made with ffmpeg's ALAC encoder, one packet at a time, the explicit "
                "frame count of its partial frames removed (see the generator); all packets, fed in order as one "
                "buffer each, decode to the pcm through GStreamer's avdec_alac with magicCookie.",
        "generator": GENERATOR,
        "fmtp": "96 " + " ".join(str(value) for value in ITUNES_FMTP),
        "fmtpValues": ITUNES_FMTP,
        "magicCookie": cookie.hex(),
        "sampleRate": 44100,
        "channels": 2,
        "framesPerPacket": FRAMES,
        "packets": vectors,
    }


# ----------------------------------------------------------------------------- DMAP

def dmap(tag, value):
    if isinstance(value, str):
        value = value.encode("utf-8")
    return tag.encode("latin-1") + struct.pack(">I", len(value)) + value


def dmap_model(data):
    """A Python model of DMAP.parseItem, to check the hand-written expectations below."""
    def entries(blob):
        out, index = [], 0
        while index < len(blob):
            if len(blob) - index < 8:
                raise ValueError("truncated DMAP header")
            tag = blob[index:index + 4]
            length = struct.unpack(">I", blob[index + 4:index + 8])[0]
            if length > len(blob) - index - 8:
                raise ValueError("runs past the end")
            out.append((tag, blob[index + 8:index + 8 + length]))
            index += 8 + length
        return out
    fields = entries(data)
    container = [value for tag, value in fields if tag == b"mlit"]
    if container:
        fields = entries(container[0])
    item = {"title": None, "artist": None, "album": None, "genre": None, "durationMilliseconds": None}
    names = {b"minm": "title", b"asar": "artist", b"asal": "album", b"asgn": "genre"}
    for tag, value in fields:
        if tag in names:
            item[names[tag]] = value.decode("utf-8", errors="replace")
        elif tag == b"astm":
            item["durationMilliseconds"] = struct.unpack(">I", value)[0] if len(value) == 4 else None
    return item


def item(title=None, artist=None, album=None, genre=None, duration=None):
    return {"title": title, "artist": artist, "album": album, "genre": genre, "durationMilliseconds": duration}


def dmap_vectors():
    pyatv = dmap("mlit", dmap("minm", "Sweep Song") + dmap("asal", "Test Album") + dmap("asar", "Test Artist"))
    check(len(pyatv) == 63, "pyatv body is 63 bytes as in raop.md")
    full = dmap("mlit",
                dmap("mikd", b"\x02")
                + dmap("minm", "Café del Mar – Ибица")
                + dmap("asar", "Sigur Rós")
                + dmap("asal", "Ágætis byrjun")
                + dmap("asgn", "Post-rock")
                + dmap("astm", struct.pack(">I", 595_000))
                + dmap("asyr", struct.pack(">H", 1999))
                + dmap("xyzw", b"\x00\x01\x02\x03\x04")
                + dmap("caps", b"\x01"))
    cafe = "Café".encode()
    # pyatv 0.18 writes each string's length in characters: Café is 4 characters, 5 bytes.
    miscount_inner = b"minm" + struct.pack(">I", 4) + cafe + dmap("asar", "Artist")
    miscount = b"mlit" + struct.pack(">I", len(miscount_inner)) + miscount_inner
    good = dmap("minm", "Title") + dmap("asar", "Artist")
    cases = [
        ("pyatv 0.18's body from Protocol/raop.md: one mlit holding title, album, artist (63 bytes)",
         pyatv, ["mlit"], item("Sweep Song", "Test Artist", "Test Album"), None),
        ("iTunes-like item: UTF-8 non-ASCII text (lengths in bytes), genre, astm duration (595000 ms), and tags "
         "that are skipped: mikd, asyr, caps and the unknown xyzw",
         full, ["mlit"], item("Café del Mar – Ибица", "Sigur Rós", "Ágætis byrjun", "Post-rock", 595_000), None),
        ("fields without the mlit wrapper are read the same way",
         dmap("minm", "Bare Title") + dmap("asgn", "Jazz"), ["minm", "asgn"], item("Bare Title", genre="Jazz"), None),
        ("empty strings are empty, not absent", dmap("mlit", dmap("minm", "") + dmap("asar", "")), ["mlit"],
         item("", ""), None),
        ("an empty body is an item with nothing in it", b"", [], item(), None),
        ("astm that is not 4 bytes gives no duration", dmap("mlit", dmap("minm", "Short") + dmap("astm", b"\x01\x02")),
         ["mlit"], item("Short"), None),
        ("invalid UTF-8 is replaced with U+FFFD, not refused", dmap("minm", b"Bad \xff byte"), ["minm"],
         item("Bad \ufffd byte"), None),
        ("only the first level of container is opened: mlit inside mlcl yields nothing",
         dmap("mlcl", dmap("mlit", dmap("minm", "Deep"))), ["mlcl"], item(), None),
        ("mlit says 55 bytes follow but only 40 do", pyatv[:48], None, None, "runs past the end"),
        ("a field inside mlit runs past the end of mlit (asar claims 64 bytes)",
         dmap("mlit", dmap("minm", "Title") + b"asar" + struct.pack(">I", 64) + b"Artist"), None, None,
         "runs past the end"),
        ("pyatv 0.18 with a non-ASCII title: minm's length counts 4 characters for 5 bytes, so the next header is "
         "read from the middle of the text and claims about 1.9 GB",
         miscount, None, None, "runs past the end"),
        ("5 stray bytes after a good field: too short for a header",
         good + b"\x00\x01\x02\x03\x04", None, None, "truncated DMAP header"),
        ("only 6 bytes", b"minm\x00\x00", None, None, "truncated DMAP header"),
    ]
    vectors = []
    for what, data, tags, expected, error in cases:
        try:
            model = dmap_model(data)
            check(error is None and model == expected, f"DMAP model disagrees on: {what}: {model}")
        except ValueError as problem:
            check(error is not None and error in str(problem), f"DMAP model error disagrees on: {what}: {problem}")
        vectors.append({"what": what, "bytes": data.hex(), "topLevelTags": tags, "expect": expected, "error": error})
    return {
        "what": "DMAP bodies of SET_PARAMETER (Content-Type: application/x-dmap-tagged). Each item is a 4-byte "
                "ASCII tag, a 4-byte big-endian length in bytes, then the value; mlit is a container of an item's "
                "fields. Read: minm title, asar artist, asal album, asgn genre (UTF-8), astm duration (ms, 4 bytes); "
                "other tags are skipped. bytes is hex. topLevelTags lists the tags at the outer level (null when the "
                "body is malformed). expect is the decoded item, or null with error: a part of the Problem text "
                "that DMAP.parseItem throws.",
        "generator": GENERATOR,
        "vectors": vectors,
    }


# ----------------------------------------------------------------------------- SDP

def sdp_model(text):
    """A Python model of RAOPStreamDescription(sdp:), to check the hand-written expectations below."""
    import re
    rtpmap, fmtp, key, iv, saw_audio = None, [], None, None, False
    for raw in re.split(r"\r\n|\n|\r", text):
        line = raw.strip(" \t")
        if not line:
            continue
        if line.startswith("m=audio"):
            saw_audio = True
        if not line.startswith("a="):
            continue
        name, _, value = line[2:].partition(":")
        if name == "rtpmap":
            rtpmap = value.split(" ", 1)[-1]
        elif name == "fmtp":
            fmtp = [token for token in value.split(" ") if token][1:]
        elif name == "rsaaeskey":
            try:
                padded = value.strip() + "=" * (-len(value.strip()) % 4)
                key = base64.b64decode(padded, validate=True)
            except Exception:
                raise ValueError("rsaaeskey is not base64")
        elif name == "aesiv":
            try:
                padded = value.strip() + "=" * (-len(value.strip()) % 4)
                iv = base64.b64decode(padded, validate=True)
            except Exception:
                iv = None
            if iv is None or len(iv) != 16:
                raise ValueError("aesiv must be 16 bytes")
    if not saw_audio or rtpmap is None:
        raise ValueError("no audio stream")
    parts = [part for part in rtpmap.split("/") if part]
    encoding = parts[0] if parts else ""

    def number(index, default):
        return int(parts[index]) if len(parts) > index and parts[index].isdigit() else default
    if encoding.lower() == "l16":
        codec, rate, channels, frames = "pcm", number(1, 44100), number(2, 2), 352
    elif encoding.lower() == "applelossless":
        numbers = [int(token) for token in fmtp if token.lstrip("-").isdigit()]
        if len(numbers) < 11:
            raise ValueError("AppleLossless needs its 11 fmtp parameters")
        codec, frames, channels, rate = "alac", numbers[0], numbers[6], numbers[10]
    elif encoding.lower() == "mpeg4-generic":
        eld = "eld" in rtpmap.lower() or "mode=aac-eld" in "".join(fmtp).lower()
        codec, rate, channels, frames = ("aacELD" if eld else "aacLC"), number(1, 44100), number(2, 2), (480 if eld else 1024)
        for token in re.split(r"[; ]", " ".join(fmtp)):
            if token.lower().startswith("constantduration=") and token[17:].isdigit():
                frames = int(token[17:])
                break
    else:
        raise ValueError("unsupported audio encoding")
    if not (8000 <= rate <= 192000 and 1 <= channels <= 8 and 1 <= frames <= 8192):
        raise ValueError("implausible stream parameters")
    config = None
    for token in re.split(r"[; ]", " ".join(fmtp)):
        if token.lower().startswith("config="):
            digits = token[7:]
            try:
                config = bytes.fromhex(digits).hex() if digits and len(digits) % 2 == 0 and len(digits) <= 64 else None
            except ValueError:
                config = None
            break
    if config is None and codec == "aacELD":
        # iOS announces ELD without config=: the AudioSpecificConfig follows from the stream.
        rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        if frames not in (480, 512) or rate not in rates or not 1 <= channels <= 7:
            raise ValueError("AAC-ELD needs constantDuration 480 or 512 at a standard sample rate")
        bits = "11111" + format(39 - 32, "06b") + format(rates.index(rate), "04b") + format(channels, "04b")
        bits += ("1" if frames == 480 else "0") + "000" + "0" + "0000" + "00"
        bits += "0" * (-len(bits) % 8)
        config = bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8)).hex()
    result = {"codec": codec, "sampleRate": rate, "channels": channels, "framesPerPacket": frames,
              "encrypted": key is not None, "rsaAESKey": key.hex() if key else None,
              "aesIV": iv.hex() if iv else None, "aacConfig": config}
    if codec == "alac":
        result["fmtp"] = numbers
    return result


def sdp_vectors(aes):
    rsaaeskey, aesiv = aes["keyWrap"]["rsaaeskey"], aes["keyWrap"]["aesiv"]
    head = "v=0\r\no=iTunes 3413821438 0 IN IP4 192.168.1.10\r\ns=iTunes\r\nc=IN IP4 192.168.1.20\r\nt=0 0\r\n"
    itunes = (head + "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 AppleLossless\r\n"
              "a=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100\r\n"
              f"a=rsaaeskey:{rsaaeskey}\r\na=aesiv:{aesiv}\r\n")
    pyatv = ("v=0\r\no=iTunes 1894178057 0 IN IP4 127.0.0.1\r\ns=iTunes\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
             "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 L16/44100/2\r\na=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100\r\n")
    check(len(pyatv) == 174, "pyatv SDP is 174 bytes as in raop.md")
    audio = "m=audio 0 RTP/AVP 96\r\n"
    key_hex = base64.b64decode(rsaaeskey).hex()
    iv_hex = STREAM_IV.hex()

    def expect(codec, rate=44100, channels=2, frames=352, key=None, iv=None, config=None, fmtp=None):
        result = {"codec": codec, "sampleRate": rate, "channels": channels, "framesPerPacket": frames,
                  "encrypted": key is not None, "rsaAESKey": key, "aesIV": iv, "aacConfig": config}
        if fmtp is not None:
            result["fmtp"] = fmtp
        return result
    cases = [
        ("iTunes: ALAC, encrypted (rsaaeskey with padding, aesiv without), CRLF", itunes,
         expect("alac", key=key_hex, iv=iv_hex, fmtp=ITUNES_FMTP), None),
        ("pyatv 0.18 (Protocol/raop.md): L16 with an ALAC-looking fmtp that is ignored, CRLF, 174 bytes", pyatv,
         expect("pcm"), None),
        ("L16 with LF line ends and an encoding in lower case", head.replace("\r\n", "\n") + audio.replace("\r\n", "\n")
         + "a=rtpmap:96 l16/44100/2\n", expect("pcm"), None),
        ("bare L16 without rate and channels means 44100 Hz stereo; CR-only line ends",
         (head + audio).replace("\r\n", "\r") + "a=rtpmap:96 L16\r", expect("pcm"), None),
        ("L16 mono at 48 kHz parses (the session then refuses anything but 44100 Hz stereo)",
         head + audio + "a=rtpmap:96 L16/48000/1\r\n", expect("pcm", rate=48000, channels=1), None),
        ("L16, encrypted: the key and IV of raop-aes-packets.json",
         head + audio + f"a=rtpmap:96 L16/44100/2\r\na=rsaaeskey:{rsaaeskey.rstrip('=')}\r\na=aesiv:{aesiv}==\r\n",
         expect("pcm", key=key_hex, iv=iv_hex), None),
        ("AAC-LC as mpeg4-generic with config= (AudioSpecificConfig 0x1210: AOT 2, 44100 Hz, 2 channels); "
         "1024 frames per packet",
         head + audio + "a=rtpmap:96 mpeg4-generic/44100/2\r\na=fmtp:96 mode=AAC-hbr; config=1210\r\n",
         expect("aacLC", frames=1024, config="1210"), None),
        ("AAC-ELD: mpeg4-generic with mode=AAC-eld and constantDuration=480, config F8E85000 (AOT 39, 44100 Hz, "
         "2 channels, 480-sample frames); 480 frames per packet",
         head + audio + "a=rtpmap:96 mpeg4-generic/44100/2\r\n"
         "a=fmtp:96 mode=AAC-eld; constantDuration=480; config=F8E85000\r\n",
         expect("aacELD", frames=480, config="f8e85000"), None),
        ("AAC-ELD without config= (as iOS sends it): the AudioSpecificConfig follows from the stream, F8E85000",
         head + audio + "a=rtpmap:96 mpeg4-generic/44100/2\r\na=fmtp:96 mode=AAC-eld; constantDuration=480\r\n",
         expect("aacELD", frames=480, config="f8e85000"), None),
        ("AAC-ELD of 512 frames without config=: F8E84000 (frameLengthFlag 0)",
         head + audio + "a=rtpmap:96 mpeg4-generic/44100/2\r\na=fmtp:96 mode=AAC-eld; constantDuration=512\r\n",
         expect("aacELD", frames=512, config="f8e84000"), None),
        ("AAC-ELD of 1024 frames without config=: refused, no such ELD frame length",
         head + audio + "a=rtpmap:96 mpeg4-generic/44100/2\r\na=fmtp:96 mode=AAC-eld; constantDuration=1024\r\n",
         None, "constantDuration 480 or 512"),
        ("a config= that is not hex is dropped, not refused",
         head + audio + "a=rtpmap:96 mpeg4-generic/44100/2\r\na=fmtp:96 mode=AAC-hbr; config=12G0\r\n",
         expect("aacLC", frames=1024), None),
        ("no m=audio line (video only)", head + "m=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\n", None,
         "no audio stream"),
        ("m=audio without a=rtpmap", head + audio, None, "no audio stream"),
        ("empty body", "", None, "no audio stream"),
        ("an encoding RAOP does not use", head + audio + "a=rtpmap:96 opus/48000/2\r\n", None,
         "unsupported audio encoding"),
        ("AppleLossless with 10 fmtp numbers",
         head + audio + "a=rtpmap:96 AppleLossless\r\na=fmtp:96 352 0 16 40 10 14 2 255 0 0\r\n", None,
         "11 fmtp parameters"),
        ("AppleLossless with 0 frames per packet",
         head + audio + "a=rtpmap:96 AppleLossless\r\na=fmtp:96 0 0 16 40 10 14 2 255 0 0 44100\r\n", None,
         "implausible"),
        ("L16 at 4000 Hz", head + audio + "a=rtpmap:96 L16/4000/2\r\n", None, "implausible"),
        ("L16 with 9 channels", head + audio + "a=rtpmap:96 L16/44100/9\r\n", None, "implausible"),
        ("rsaaeskey that is not base64", head + audio + "a=rtpmap:96 L16/44100/2\r\na=rsaaeskey:not*base64\r\n",
         None, "rsaaeskey is not base64"),
        ("aesiv of 8 bytes", head + audio + "a=rtpmap:96 L16/44100/2\r\na=aesiv:AAECAwQFBgc\r\n", None,
         "aesiv must be 16 bytes"),
    ]
    vectors = []
    for what, text, expected, error in cases:
        try:
            model = sdp_model(text)
            check(error is None and model == expected, f"SDP model disagrees on: {what}: {model} vs {expected}")
        except ValueError as problem:
            check(error is not None and error in str(problem), f"SDP model error disagrees on: {what}: {problem}")
        vectors.append({"what": what, "sdp": text, "expect": expected, "error": error})
    return {
        "what": "ANNOUNCE bodies (application/sdp) and what RAOPStreamDescription(sdp:) makes of them. codec is "
                "pcm (L16, cn=0), alac (AppleLossless, cn=1, with its 11 fmtp numbers), aacLC (mpeg4-generic, "
                "cn=2) or aacELD (mpeg4-generic with mode=AAC-eld, cn=3). rsaAESKey, aesIV and aacConfig are hex "
                "of the decoded bytes, or null. encrypted is true when a=rsaaeskey is present. expect is null for "
                "bodies that are refused; error is then a part of the Problem text.",
        "generator": GENERATOR,
        "vectors": vectors,
    }


# ----------------------------------------------------------------------------- UDP packets

NTP_2024 = (3_913_056_000 << 32)  # 2024-01-01T00:00:00Z in NTP 32.32 (seconds since 1900)


def ntp(seconds_after_2024, fraction):
    return NTP_2024 + (seconds_after_2024 << 32) + fraction


def packet_vectors():
    payload = bytes.fromhex("0001fffe7fff8000")  # two L16 frames: (1, -2), (32767, -32768), big-endian
    audio_first = struct.pack(">BBHII", 0x80, 0xE0, 31022, 66150, 0) + payload
    audio_next = struct.pack(">BBHII", 0x80, 0x60, 31023, 66502, 0x70E7A409) + payload
    audio_wrap = struct.pack(">BBHII", 0x80, 0x60, 65535, 0xFFFFFEA0, 0)
    sync_first = struct.pack(">BBHIQI", 0x90, 0xD4, 7, 88100, ntp(12, 0x80000000), 110150)
    sync_next = struct.pack(">BBHIQI", 0x80, 0xD4, 7, 132200, ntp(13, 0x80000000), 154200)
    sync_flags_zero = struct.pack(">BBHIQI", 0x80, 0xD4, 0, 132200, ntp(13, 0x80000000), 154200)
    # An AirPlay 2 realtime stream's PTP anchor as OwnTone 29.3 writes it: frame1, the PTP time in
    # ns, frame1 + 77175, the grandmaster's clock identity; frame1 - 11035 is heard at that time.
    frame1, ptp_ns, clock_id = 1_000_000, 1_234_567_890_123, 0x001122FFFE334455
    ptp_anchor = struct.pack(">BBHIQIQ", 0x90, 0xD7, 6, frame1, ptp_ns, frame1 + 77175, clock_id)
    origin, receive, transmit = ntp(1, 0x40000000), ntp(1, 0x40A3D70A), ntp(1, 0x40C49BA5)
    timing_request = struct.pack(">BBHIQQQ", 0x80, 0xD2, 7, 0, 0, 0, origin)
    timing_reply = struct.pack(">BBHIQQQ", 0x80, 0xD3, 7, 0, origin, receive, transmit)
    inner = struct.pack(">BBHII", 0x80, 0x60, 31030, 66150 + 8 * 352, 0x70E7A409) + payload
    retransmitted = struct.pack(">BBH", 0x80, 0xD6, 31030) + inner
    resend = struct.pack(">BBHHH", 0x80, 0xD5, 1, 31030, 1)
    check(resend.hex() == "80d5000179360001", "resend example of raop.md")

    def audio(sequence, timestamp, marker, data):
        return {"kind": "audio", "sequence": sequence, "timestamp": timestamp, "marker": marker, "payload": data.hex()}
    cases = [
        ("audio, first packet of the stream: 0x80, 0xE0 (type 0x60 + marker), sequence 31022, RTP time 66150, SSRC 0, "
         "then the payload (here two L16 frames)", "server", audio_first, audio(31022, 66150, True, payload), True),
        ("audio, next packet: marker clear; the SSRC (pyatv puts its session id) is ignored", "server", audio_next,
         audio(31023, 66502, False, payload), False),
        ("audio header alone: sequence 65535 and an RTP time about to wrap; empty payload", "server", audio_wrap,
         audio(65535, 0xFFFFFEA0, False, b""), True),
        ("sync, first after RECORD/FLUSH: 0x90 (extension bit 0x10 set), 0xD4 (type 0x54 + marker), 0x0007, "
         "RTP time now playing minus latency, NTP time, RTP time of the next packet", "control", sync_first,
         {"kind": "sync", "isFirst": True, "rtpTimeNowMinusLatency": 88100, "ntpTime": f"{ntp(12, 0x80000000):016x}",
          "rtpTimeNext": 110150}, False),
        ("sync, later ones: 0x80", "control", sync_next,
         {"kind": "sync", "isFirst": False, "rtpTimeNowMinusLatency": 132200,
          "ntpTime": f"{ntp(13, 0x80000000):016x}", "rtpTimeNext": 154200}, True),
        ("sync with flags 0x0000 (no sender known sends it): the frame named is heard at the NTP time itself; "
         "flags 0x0007 (every sender known) mean it is heard 11025 frames after it", "control", sync_flags_zero,
         {"kind": "sync", "isFirst": False, "rtpTimeNowMinusLatency": 132200,
          "ntpTime": f"{ntp(13, 0x80000000):016x}", "rtpTimeNext": 154200, "flags": 0}, True),
        ("AirPlay 2 realtime anchor on PTP (OwnTone 29.3, Music Assistant): 0x90, 0xD7 (type 0x57 + marker), "
         "0x0006, frame1, the PTP time in ns, frame1 + 77175, the grandmaster's clock identity; frame1 - 11035 "
         "is heard at that time", "control", ptp_anchor,
         {"kind": "ptpAnchor", "rtpTimeNowMinusLatency": frame1, "networkTime": f"{ptp_ns:016x}",
          "rtpTimeNext": frame1 + 77175, "clockIdentity": f"{clock_id:016x}", "heardRTPTime": frame1 - 11035}, True),
        ("a PTP anchor of 27 bytes", "control", ptp_anchor[:27], None, False),
        ("timing request: 0x80 0xD2 0x0007, 4 zero bytes, origin, receive, transmit (a sender's request has only "
         "transmit set)", "timing", timing_request,
         {"kind": "timingRequest", "origin": f"{0:016x}", "receive": f"{0:016x}", "transmit": f"{origin:016x}"}, True),
        ("timing reply: origin is the request's transmit time, then receive and transmit of the answerer",
         "timing", timing_reply,
         {"kind": "timingReply", "origin": f"{origin:016x}", "receive": f"{receive:016x}",
          "transmit": f"{transmit:016x}"}, True),
        ("retransmitted audio: 0x80 0xD6 (type 0x56 + marker), the sequence, then the original 0x60 packet unchanged",
         "control", retransmitted, dict(audio(31030, 66150 + 8 * 352, False, payload), kind="retransmitted"), False),
        ("resend request as airplayd sends it (0x80 0xD5 0x0001, first missing sequence, count): 31030 lost, "
         "31031 arrived. The receiver never accepts one: parse gives null", "control", resend, None, False),
        ("3 bytes", "server", bytes.fromhex("806000"), None, False),
        ("audio of 11 bytes: shorter than the 12-byte header", "server", audio_first[:11], None, False),
        ("version bits 00", "server", bytes([0x00]) + audio_first[1:], None, False),
        ("version bits 11", "server", bytes([0xC0]) + audio_first[1:], None, False),
        ("an unknown payload type (0x61)", "server", bytes([0x80, 0x61]) + audio_first[2:], None, False),
        ("sync of 19 bytes", "control", sync_first[:19], None, False),
        ("timing request of 31 bytes", "timing", timing_request[:31], None, False),
        ("retransmission header with nothing after it", "control", retransmitted[:4], None, False),
        ("retransmission whose inner packet is 11 bytes", "control", retransmitted[:15], None, False),
        ("retransmission wrapping a sync packet instead of audio", "control",
         struct.pack(">BBH", 0x80, 0xD6, 31030) + sync_next, None, False),
    ]
    vectors = []
    for what, port, data, expected, encodes in cases:
        entry = {"what": what, "port": port, "bytes": data.hex(), "expect": expected}
        if encodes:
            entry["encoderWritesTheseBytes"] = True
        if data == resend:
            entry["resendRequest"] = {"firstSequence": 31030, "count": 1}
        vectors.append(entry)
    return {
        "what": "RAOP UDP datagrams (all fields big-endian) and what RAOPPacket.parse makes of them; expect null "
                "means parse returns nil. A datagram needs version bits 10 (b[0] & 0xC0 == 0x80); its type is "
                "b[1] & 0x7F, the marker bit b[1] & 0x80. port is where it travels: server (audio), control (sync, "
                "resend requests, retransmissions), timing. bytes, payload and the 64-bit NTP times (32.32 fixed "
                "point, seconds since 1900; here 2024-01-01 plus a few seconds) are hex; sequence numbers and RTP "
                "times are decimal. encoderWritesTheseBytes marks packets that RAOPAudioPacket.bytes (SSRC 0), "
                "RAOPSync.bytes, RAOPPTPAnchor.bytes or RAOPTiming.bytes(reply:) produce exactly. A ptpAnchor "
                "reuses rtpTimeNowMinusLatency for frame1 and rtpTimeNext for frame2; its networkTime is in ns. resendRequest gives the fields of the 0x55 layout.",
        "generator": GENERATOR,
        "vectors": vectors,
    }


def main():
    pem, key = airport_key()
    os.makedirs(OUT, exist_ok=True)
    write("raop-apple-response.json", apple_response_vectors(pem, key))
    aes = aes_vectors(key)
    write("raop-aes-packets.json", aes)
    write("raop-alac-frames.json", alac_vectors())
    write("raop-dmap.json", dmap_vectors())
    write("raop-sdp.json", sdp_vectors(aes))
    write("raop-packets.json", packet_vectors())


if __name__ == "__main__":
    main()
