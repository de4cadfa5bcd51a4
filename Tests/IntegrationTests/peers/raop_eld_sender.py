#!/usr/bin/env python3
"""An AAC-ELD RAOP sender for tests, with packets built bit by bit (no AAC-ELD encoder is free
to install on Debian: FFmpeg's own encoder does not do ELD, and libfdk-aac is non-free).

Usage: raop_eld_sender.py HOST PORT RAW_OUTPUT_PATH [FRAME_LENGTH]
Announces `mpeg4-generic/44100/2` with `mode=AAC-eld; constantDuration=480` and no `config=`
(as iOS senders do), then streams 2 s of packets that each hold one stereo channel pair with a
single spectral line per channel: steady tones, left near 988 Hz and right near 1860 Hz for 480
frames. Checks that the receiver's raw output holds FRAME_LENGTH frames per packet and that each
channel's loudest frequency is its tone. Prints "OK {json}" or "FAIL reason".

The bitstream (ISO 14496-3): an ER AAC ELD raw_data_block for a channel pair is ics_info (only
max_sfb: ELD has one window shape and a common window), ms_mask_present, then per channel
global_gain, section_data, scale factors, tns_data_present and the spectral data.
"""
import json, math, os, socket, struct, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raop_encrypted_sender import fail, request, start_session  # noqa: E402

# Scale factor band offsets for 44.1 kHz (ISO 14496-3 tables for the 480 and 512 frame lengths).
BANDS = {
    480: [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 64, 72, 80, 88, 96, 108, 120, 132, 144, 156, 172,
          188, 212, 240, 272, 304, 336, 368, 400, 432, 480],
    512: [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 68, 76, 84, 92, 100, 112, 124, 136, 148, 164,
          184, 208, 236, 268, 300, 332, 364, 396, 428, 460, 512],
}
# Spectrum Huffman codebook 1 (signed quadruples of -1..1), codeword and length per index.
CODEBOOK1 = list(zip(
    [0x7f8, 0x1f1, 0x7fd, 0x3f5, 0x068, 0x3f0, 0x7f7, 0x1ec, 0x7f5, 0x3f1, 0x072, 0x3f4, 0x074, 0x011, 0x076, 0x1eb,
     0x06c, 0x3f6, 0x7fc, 0x1e1, 0x7f1, 0x1f0, 0x061, 0x1f6, 0x7f2, 0x1ea, 0x7fb, 0x1f2, 0x069, 0x1ed, 0x077, 0x017,
     0x06f, 0x1e6, 0x064, 0x1e5, 0x067, 0x015, 0x062, 0x012, 0x000, 0x014, 0x065, 0x016, 0x06d, 0x1e9, 0x063, 0x1e4,
     0x06b, 0x013, 0x071, 0x1e3, 0x070, 0x1f3, 0x7fe, 0x1e7, 0x7f3, 0x1ef, 0x060, 0x1ee, 0x7f0, 0x1e2, 0x7fa, 0x3f3,
     0x06a, 0x1e8, 0x075, 0x010, 0x073, 0x1f4, 0x06e, 0x3f7, 0x7f6, 0x1e0, 0x7f9, 0x3f2, 0x066, 0x1f5, 0x7ff, 0x1f7,
     0x7f4],
    [11, 9, 11, 10, 7, 10, 11, 9, 11, 10, 7, 10, 7, 5, 7, 9, 7, 10, 11, 9, 11, 9, 7, 9, 11, 9, 11, 9, 7, 9, 7, 5,
     7, 9, 7, 9, 7, 5, 7, 5, 1, 5, 7, 5, 7, 9, 7, 9, 7, 5, 7, 9, 7, 9, 11, 9, 11, 9, 7, 9, 11, 9, 11, 10,
     7, 9, 7, 5, 7, 9, 7, 10, 11, 9, 11, 10, 7, 9, 11, 9, 11]))
LINES = (21, 40)  # the spectral line of each channel


class Bits:
    def __init__(self):
        self.bits = []

    def put(self, value, width):
        self.bits += [(value >> (width - 1 - i)) & 1 for i in range(width)]

    def bytes(self):
        padded = self.bits + [0] * (-len(self.bits) % 8)
        return bytes(int("".join(map(str, padded[i:i + 8])), 2) for i in range(0, len(padded), 8))


def access_unit(frame_length):
    """One channel pair element: each channel codes one band with codebook 1, one line at +1."""
    bands = BANDS[frame_length]
    band_of = [max(i for i in range(len(bands) - 1) if bands[i] <= line) for line in LINES]
    max_sfb = max(band_of) + 1
    out = Bits()
    out.put(max_sfb, 6)
    out.put(0, 2)  # ms_mask_present
    for line, band in zip(LINES, band_of):
        out.put(190, 8)  # global_gain
        for codebook, length in ((0, band), (1, 1), (0, max_sfb - band - 1)):
            if length == 0:
                continue
            out.put(codebook, 4)
            while length >= 31:
                out.put(31, 5)
                length -= 31
            out.put(length, 5)
        out.put(0, 1)  # the coded band's scale factor: difference 0
        out.put(0, 1)  # tns_data_present
        for quad in range(bands[band], bands[band + 1], 4):
            values = [1 if quad + i == line else 0 for i in range(4)]
            code, width = CODEBOOK1[27 * (values[0] + 1) + 9 * (values[1] + 1) + 3 * (values[2] + 1) + values[3] + 1]
            out.put(code, width)
    return out.bytes()


def loudest(samples, lo=200, hi=6000, step=10):
    """The frequency (Hz, to `step`) with the most energy in `samples`, by the Goertzel filter."""
    best = (0, 0)
    for frequency in range(lo, hi, step):
        coefficient = 2 * math.cos(2 * math.pi * frequency / 44100)
        s1 = s2 = 0.0
        for x in samples:
            s1, s2 = x + coefficient * s1 - s2, s1
        best = max(best, (s1 * s1 + s2 * s2 - coefficient * s1 * s2, frequency))
    return best[1]


def main():
    host, port, raw_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    frame_length = int(sys.argv[4]) if len(sys.argv) > 4 else 480
    sock = socket.create_connection((host, port), timeout=10)
    sdp = ("v=0\r\no=iTunes 1 0 IN IP4 127.0.0.1\r\ns=iTunes\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
           "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 mpeg4-generic/44100/2\r\n"
           f"a=fmtp:96 mode=AAC-eld; constantDuration={frame_length}\r\n")
    server_port, _control = start_session(sock, sdp, 1)
    audio = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = access_unit(frame_length)
    packets = int(2 * 44100 / frame_length)
    start = time.monotonic()
    for n in range(packets):
        audio.sendto(struct.pack(">BBHII", 0x80, 0xE0 if n == 0 else 0x60, n, n * frame_length, 0) + payload,
                     (host, server_port))
        wait = start + (n + 1) * frame_length / 44100 - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    time.sleep(1.2)
    request(sock, "TEARDOWN", 4)

    with open(raw_path, "rb") as f:
        data = f.read()
    samples = struct.unpack(f"<{len(data) // 2}h", data[: len(data) // 2 * 2])
    frames = len(samples) // 2
    if frames != packets * frame_length:
        fail(f"{frames} frames out for {packets} packets of {frame_length}")
    middle = samples[2 * (frames // 2): 2 * (frames // 2) + 2 * 4096]
    left, right = loudest(middle[0::2]), loudest(middle[1::2])
    expected = [(line + 0.5) * 44100 / (2 * frame_length) for line in LINES]
    if abs(left - expected[0]) > 60 or abs(right - expected[1]) > 60:
        fail(f"tones at {left} / {right} Hz, expected about {expected[0]:.0f} / {expected[1]:.0f} Hz")
    level = math.sqrt(sum(x * x for x in middle) / len(middle))
    if level < 1000:
        fail(f"output level {level:.0f} is too low for the tones")
    print("OK " + json.dumps({"packets": packets, "frames": frames, "left_hz": left, "right_hz": right, "rms": round(level)}))


if __name__ == "__main__":
    main()
