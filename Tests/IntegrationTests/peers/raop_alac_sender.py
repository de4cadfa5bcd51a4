#!/usr/bin/env python3
"""A compressed-audio RAOP sender for tests: real ALAC or AAC packets made by ffmpeg, taken out
of an .m4a.

Usage: raop_alac_sender.py HOST PORT RAW_OUTPUT_PATH FILE.m4a REFERENCE.wav [TOLERANCE]
Reads the MP4 sample table (the stsd entry's alac config or esds AudioSpecificConfig, stsz sizes,
stsc + stco chunks), announces AppleLossless or mpeg4-generic with the matching fmtp, sends every
packet in real time, and compares the receiver's raw output with the reference PCM, sample by
sample within TOLERANCE (default 0: bit-exact). Prints "OK {json}" or "FAIL reason".
"""
import json, os, socket, struct, sys, time, wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raop_encrypted_sender import compare_output, fail, request, start_session  # noqa: E402


def boxes(data, start, end):
    """(type, payload start, payload end) of the boxes between start and end."""
    while start + 8 <= end:
        size, kind = struct.unpack(">I4s", data[start:start + 8])
        header = 8
        if size == 1:
            size = struct.unpack(">Q", data[start + 8:start + 16])[0]
            header = 16
        if size < header:
            return
        yield kind.decode("latin-1"), start + header, start + size
        start += size


def find(data, path, start=0, end=None):
    end = len(data) if end is None else end
    for kind, a, b in boxes(data, start, end):
        if kind == path[0]:
            return (a, b) if len(path) == 1 else find(data, path[1:], a, b)
    return None


def aac_config(data, start):
    """The DecoderSpecificInfo (tag 5) inside the esds box after `start`."""
    esds = data.find(b"esds", start)
    index = esds + 8
    while index < len(data):
        tag = data[index]
        index += 1
        length = 0
        while True:
            byte = data[index]
            index += 1
            length = length << 7 | byte & 0x7F
            if not byte & 0x80:
                break
        if tag == 0x05:
            return data[index:index + length]
        if tag == 0x03:
            index += 3  # ES_ID and flags, then nested descriptors
        elif tag == 0x04:
            index += 13  # object type, stream type, buffer size, bit rates
        else:
            index += length
    fail("no AudioSpecificConfig")


def alac_packets(path):
    data = open(path, "rb").read()
    stbl = find(data, ["moov", "trak", "mdia", "minf", "stbl"])
    if stbl is None:
        fail("no sample table in " + path)
    a, b = stbl
    stsd = find(data, ["stsd"], a, b)
    # stsd: version/flags, count, then the sample entry ('alac' holding an 'alac' atom, or 'mp4a' with an esds).
    entry = stsd[0] + 8
    kind = data[entry + 4:entry + 8]
    if kind == b"mp4a":
        config = aac_config(data, entry)
        fmtp = None
    else:
        inner = data.find(b"alac", entry + 8 + 28 - 8)
        config = data[inner + 8: inner + 8 + 24]  # skip 'alac' + version/flags
        frame_length, compat, depth, pb, mb, kb, channels, max_run, max_frame, bitrate, rate = struct.unpack(">IBBBBBBHIII", config)
        fmtp = [frame_length, compat, depth, pb, mb, kb, channels, max_run, max_frame, bitrate, rate]
    s, _ = find(data, ["stsz"], a, b)
    uniform, count = struct.unpack(">II", data[s + 4:s + 12])
    sizes = [uniform] * count if uniform else list(struct.unpack(f">{count}I", data[s + 12:s + 12 + 4 * count]))
    s, _ = find(data, ["stco"], a, b)
    chunks = struct.unpack(">I", data[s + 4:s + 8])[0]
    offsets = struct.unpack(f">{chunks}I", data[s + 8:s + 8 + 4 * chunks])
    s, _ = find(data, ["stsc"], a, b)
    runs = struct.unpack(">I", data[s + 4:s + 8])[0]
    table = [struct.unpack(">III", data[s + 8 + 12 * i:s + 20 + 12 * i]) for i in range(runs)]
    packets, sample = [], 0
    for chunk in range(chunks):
        per_chunk = [r[1] for r in table if r[0] - 1 <= chunk][-1]
        position = offsets[chunk]
        for _ in range(per_chunk):
            if sample >= count:
                break
            packets.append(data[position:position + sizes[sample]])
            position += sizes[sample]
            sample += 1
    return fmtp, config, packets


def main():
    host, port, raw_path, source, reference = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    tolerance = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    fmtp, config, packets = alac_packets(source)
    sdp = "v=0\r\no=iTunes 1 0 IN IP4 127.0.0.1\r\ns=iTunes\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 0 RTP/AVP 96\r\n"
    if fmtp:
        frames = fmtp[0]
        sdp += "a=rtpmap:96 AppleLossless\r\na=fmtp:96 " + " ".join(str(v) for v in fmtp) + "\r\n"
    else:
        frames = 1024
        sdp += "a=rtpmap:96 mpeg4-generic/44100/2\r\na=fmtp:96 mode=AAC-hbr; config=" + config.hex() + "\r\n"
    sock = socket.create_connection((host, port), timeout=10)
    server_port, control = start_session(sock, sdp, 1)
    audio = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    start = time.monotonic()
    for n, payload in enumerate(packets):
        header = struct.pack(">BBHII", 0x80, 0xE0 if n == 0 else 0x60, n, n * frames, 0x12345678)
        audio.sendto(header + payload, ("127.0.0.1", server_port))
        delay = start + (n + 1) * frames / 44100 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    time.sleep(1.0)
    request(sock, "TEARDOWN", 4)
    time.sleep(0.3)

    w = wave.open(reference)
    sent = list(struct.unpack(f"<{w.getnframes() * 2}h", w.readframes(w.getnframes())))
    # Codecs with priming (AAC) decode a little longer than the reference; compare what overlaps.
    sent = sent[: 2 * max(0, w.getnframes() - 2048)] if not fmtp else sent
    share, base = compare_output(raw_path, sent, tolerance)
    print("OK " + json.dumps({"packets": len(packets), "frames_per_packet": frames, "bit_exact": share, "offset_frames": base // 2}))


if __name__ == "__main__":
    main()
