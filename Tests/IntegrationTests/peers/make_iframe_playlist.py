#!/usr/bin/env python3
"""Writes an HLS I-frame playlist for a TS media playlist, as a segmenter would.

Usage: make_iframe_playlist.py MEDIA.m3u8 OUT.m3u8
For every key frame of every segment (found with ffprobe's packet positions) one entry:
EXT-X-BYTERANGE covering the key frame's packets, EXTINF the time to the next key frame,
the segment as URI, under EXT-X-I-FRAMES-ONLY. Prints the number of key frames.
"""
import json, os, subprocess, sys

media, out = sys.argv[1], sys.argv[2]
folder = os.path.dirname(media)
segments = [line.strip() for line in open(media) if line.strip() and not line.startswith("#")]
frames = []
for name in segments:
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time,pos,flags",
                            "-of", "json", os.path.join(folder, name)], capture_output=True, text=True, check=True)
    packets = [p for p in json.loads(probe.stdout)["packets"] if "pos" in p]
    for index, packet in enumerate(packets):
        if "K" in packet["flags"]:
            start = int(packet["pos"])
            end = int(packets[index + 1]["pos"]) if index + 1 < len(packets) else os.path.getsize(os.path.join(folder, name))
            frames.append((float(packet["pts_time"]), name, start, end - start))
lines = ["#EXTM3U", "#EXT-X-VERSION:4", "#EXT-X-TARGETDURATION:4", "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-I-FRAMES-ONLY"]
for index, (time, name, start, length) in enumerate(frames):
    duration = frames[index + 1][0] - time if index + 1 < len(frames) else 2.0
    lines += [f"#EXTINF:{max(duration, 0.04):.3f},", f"#EXT-X-BYTERANGE:{length}@{start}", name]
lines.append("#EXT-X-ENDLIST")
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
print(len(frames))
