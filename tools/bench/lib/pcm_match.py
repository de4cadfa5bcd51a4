"""How much of a receiver's raw output is the sent sweep, bit for bit, for tools/bench/raop-receive.

    python3 pcm_match.py SWEEP.wav OUTPUT.pcm      prints the share (0..1)

Both are 16-bit little-endian stereo. The output is aligned on 16 frames of the sweep taken
1 s in (receivers may drop the first packets or lead with silence); from there the sweep is
cut into 441-frame blocks (10 ms), and the share is the blocks found unchanged at the same
offset in the output. Noise, a wrong byte order or a shifted stream all give about 0.
"""
import sys

FRAME = 4
BLOCK = 441 * FRAME


def main():
    wav = open(sys.argv[1], "rb").read()
    samples = wav[wav.index(b"data") + 8:]
    output = open(sys.argv[2], "rb").read()
    start = 44100 * FRAME
    probe = samples[start:start + 16 * FRAME]
    at = output.find(probe)
    while at >= 0 and at % FRAME:
        at = output.find(probe, at + 1)
    if at < 0:
        print("0.0000")
        return
    offset = at - start
    total = equal = 0
    for block in range(start, len(samples) - BLOCK + 1, BLOCK):
        total += 1
        if block + offset >= 0 and output[block + offset:block + offset + BLOCK] == samples[block:block + BLOCK]:
            equal += 1
    print(f"{equal / total:.4f}" if total else "0.0000")


if __name__ == "__main__":
    main()
