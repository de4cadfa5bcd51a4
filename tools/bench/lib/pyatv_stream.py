"""pyatv's atvremote with one change, for tools/bench/raop-receive: the ANNOUNCE carries no
a=fmtp line. Run with the peers' venv python; arguments are atvremote's.

pyatv 0.18 always streams L16 but announces it with an ALAC-style fmtp line. Debian's
shairport-sync 3.3.8 then sets up its ALAC decoder on the L16 packets, writes noise and
crashes within a second. Without the line both receivers take the stream as plain L16
(RFC 3551: 16-bit big-endian at the rtpmap's rate and channel count), which is what pyatv
sends either way. Every packet pyatv sends is unchanged.
"""
import sys

import pyatv.support.rtsp as rtsp

payload = rtsp.ANNOUNCE_PAYLOAD
kept = [line for line in payload.split("\r\n") if not line.startswith("a=fmtp:")]
rtsp.ANNOUNCE_PAYLOAD = "\r\n".join(kept)
if rtsp.ANNOUNCE_PAYLOAD == payload or "a=rtpmap:96 L16/" not in payload:
    sys.exit("pyatv_stream.py: this pyatv's ANNOUNCE is not the one expected (L16 with an fmtp line)")

from pyatv.scripts.atvremote import main  # noqa: E402  (after the patch, like any later import)

sys.argv[0] = "atvremote"
sys.exit(main())
