#!/usr/bin/env python3
"""Playlists for tools/bench/hls, and the peer's side of its parse benchmark.

  hls_parse.py make SEGMENTS FILE [--key-every K]
      writes a live media playlist (no EXT-X-ENDLIST) of SEGMENTS segments, each with
      EXT-X-PROGRAM-DATE-TIME, EXTINF and a ~60-character URI; with --key-every, an
      EXT-X-KEY (AES-128, its own URI and IV) before every K-th segment, starting with the first.
  hls_parse.py m3u8 FILE
      reads FILE, then parses it with the PyPI m3u8 package in this process and prints, like
      `airplay hls inspect FILE --stats` on stderr, one line:
      parse_ms=… peak_rss_kib=… segments=… encrypted=…
      parse_ms is time.perf_counter() around m3u8.loads(text) alone; peak_rss_kib is
      getrusage(RUSAGE_SELF).ru_maxrss (KiB on Linux) at exit: the whole process, interpreter
      and all, as airplay's VmHWM is the whole process with the Swift runtime.
"""
import datetime, resource, sys, time


def make(count, path, key_every):
    sequence = 1_000_000
    start = datetime.datetime(2026, 11, 22, tzinfo=datetime.timezone.utc)
    elapsed_ms = 0
    lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:6", f"#EXT-X-MEDIA-SEQUENCE:{sequence}"]
    for index in range(count):
        number = sequence + index
        if key_every and index % key_every == 0:
            lines.append(f'#EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.net/live/ch7/k{index // key_every}.bin",'
                         f"IV=0x{number:032X}")
        when = start + datetime.timedelta(milliseconds=elapsed_ms)
        lines.append("#EXT-X-PROGRAM-DATE-TIME:" + when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z")
        duration_ms = 6006 if index % 2 == 0 else 5994
        lines.append(f"#EXTINF:{duration_ms / 1000:.3f},")
        lines.append(f"https://cdn.example.net/live/ch7/720p/seg-{number:09d}-a1b2c3.ts")
        elapsed_ms += duration_ms
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def peer(path):
    import m3u8
    with open(path) as f:
        text = f.read()
    started = time.perf_counter()
    playlist = m3u8.loads(text)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    encrypted = sum(1 for s in playlist.segments if s.key is not None and (s.key.method or "NONE") != "NONE")
    print(f"parse_ms={elapsed * 1000:.3f} peak_rss_kib={peak} segments={len(playlist.segments)} encrypted={encrypted}")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "make":
        key_every = int(sys.argv[5]) if len(sys.argv) == 6 and sys.argv[4] == "--key-every" else 0
        make(int(sys.argv[2]), sys.argv[3], key_every)
    elif len(sys.argv) == 3 and sys.argv[1] == "m3u8":
        peer(sys.argv[2])
    else:
        sys.exit(__doc__)
