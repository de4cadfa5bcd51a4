#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (Fuzz/Corpus/NAME/) from Protocol/vectors, the test
fixtures and a few exchanges written out here, and the dictionaries beside them are kept by hand.
Run again after the vectors change; the output is committed so a fuzz run needs no Python."""
import base64, hashlib, json, os, plistlib, shutil, struct, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
corpus = os.path.join(root, "Fuzz", "Corpus")
vectors = os.path.join(root, "Protocol", "vectors")
seeds = {}


def add(target, data):
    if isinstance(data, str):
        data = data.encode()
    seeds.setdefault(target, []).append(bytes(data))


def vector(name):
    with open(os.path.join(vectors, name)) as f:
        return json.load(f)


def cut(*parts):
    """A FuzzInput of `pieces(len(parts))`: big-endian 16-bit cut lengths, then the bytes."""
    head = b"".join(struct.pack(">H", len(p)) for p in parts[:-1])
    return head + b"".join(parts)


def request(method, target, headers=(), body=b"", version="RTSP/1.0"):
    if isinstance(body, str):
        body = body.encode()
    lines = [f"{method} {target} {version}"] + [f"{k}: {v}" for k, v in headers]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


sdps = [v["sdp"] for v in vector("raop-sdp.json")["vectors"]]
alac_sdp = next(s for s in sdps if "AppleLossless" in s)

# control-request and rtsp-session: whole RTSP and HTTP exchanges.
raop_session = b"".join([
    request("OPTIONS", "*", [("CSeq", "2"), ("Apple-Challenge", "AAECAwQFBgcICQoLDA0ODw")]),
    request("ANNOUNCE", "rtsp://127.0.0.1/1", [("CSeq", "4"), ("Content-Type", "application/sdp")], alac_sdp),
    request("SETUP", "rtsp://127.0.0.1/1", [("CSeq", "6"), ("Transport", "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=6001;timing_port=6002")]),
    request("RECORD", "rtsp://127.0.0.1/1", [("CSeq", "8"), ("Range", "npt=0-"), ("RTP-Info", "seq=1000;rtptime=352000")]),
    request("X-PACKETS", "*", [("CSeq", "10")], bytes([0x03, 0xE8, 1, 0x03, 0xE9, 0, 0x03, 0xF0, 4, 0x03, 0xEA, 2, 0x03, 0xF1, 4])),
    request("SET_PARAMETER", "rtsp://127.0.0.1/1", [("CSeq", "12"), ("Content-Type", "text/parameters")], "volume: -11.5\r\n"),
    request("SET_PARAMETER", "rtsp://127.0.0.1/1", [("CSeq", "14"), ("Content-Type", "text/parameters")], "progress: 352000/441000/8000000\r\n"),
    request("SET_PARAMETER", "rtsp://127.0.0.1/1", [("CSeq", "16"), ("Content-Type", "application/x-dmap-tagged"),
                                                    ("RTP-Info", "rtptime=352000")], bytes.fromhex(vector("raop-dmap.json")["vectors"][0]["bytes"])),
    request("GET_PARAMETER", "rtsp://127.0.0.1/1", [("CSeq", "18"), ("Content-Type", "text/parameters")], "volume\r\n"),
    request("FLUSH", "rtsp://127.0.0.1/1", [("CSeq", "20"), ("RTP-Info", "seq=1100;rtptime=387200")]),
    request("TEARDOWN", "rtsp://127.0.0.1/1", [("CSeq", "22")]),
])
add("control-request", raop_session)
add("rtsp-session", raop_session)
takeover = request("ANNOUNCE", "rtsp://127.0.0.1/1", [("CSeq", "1"), ("Content-Type", "application/sdp")], alac_sdp) + \
    request("ANNOUNCE", "rtsp://127.0.0.1/2", [("CSeq", "2"), ("Content-Type", "application/sdp")], sdps[0]) + \
    request("X-CLOSE", "*", [("CSeq", "3")])
add("rtsp-session", takeover)
ap2_session_setup = plistlib.dumps({"timingProtocol": "PTP", "timingPeerInfo": {"Addresses": ["10.0.0.2", "fe80::1"], "ID": "10.0.0.2"},
                                    "sessionUUID": "5B1C8D46-9C2D-4D83-8A33-1D2B7C0C7E51", "groupUUID": "0D2B7C0C-1D2B-4D83-8A33-5B1C8D469C2D",
                                    "deviceID": "AA:BB:CC:DD:EE:FF", "name": "fuzz", "model": "iPhone10,6"}, fmt=plistlib.FMT_BINARY)
ap2_streams = lambda kind: plistlib.dumps({"streams": [{"type": kind, "ct": 2, "spf": 352, "sr": 44100, "audioFormat": 0x40000,
                                                        "shk": bytes(range(32)), "controlPort": 6010, "latencyMin": 11025,
                                                        "latencyMax": 88200, "streamConnectionID": 42, "audioBufferSize": 8388608}]}, fmt=plistlib.FMT_BINARY)
anchor = plistlib.dumps({"rate": 1, "rtpTime": 352000, "networkTimeSecs": 1000, "networkTimeFrac": 1 << 63,
                         "networkTimeTimelineID": 0x1234}, fmt=plistlib.FMT_BINARY)
flush = plistlib.dumps({"flushUntilSeq": 1200, "flushUntilTS": 400000, "flushFromSeq": 1100, "flushFromTS": 352000},
                       fmt=plistlib.FMT_BINARY)
peers = plistlib.dumps(["10.0.0.2", "10.0.0.3", "fe80::2"], fmt=plistlib.FMT_BINARY)
for kind in (96, 103):
    ap2 = b"".join([
        request("SETUP", "rtsp://10.0.0.1/1", [("CSeq", "1"), ("Content-Type", "application/x-apple-binary-plist")], ap2_session_setup),
        request("SETPEERS", "rtsp://10.0.0.1/1", [("CSeq", "3"), ("Content-Type", "/peer-list-changed")], peers),
        request("SETUP", "rtsp://10.0.0.1/1", [("CSeq", "5"), ("Content-Type", "application/x-apple-binary-plist")], ap2_streams(kind)),
        request("RECORD", "rtsp://10.0.0.1/1", [("CSeq", "7")]),
        request("SETRATEANCHORTIME", "rtsp://10.0.0.1/1", [("CSeq", "9"), ("Content-Type", "application/x-apple-binary-plist")], anchor),
        request("FLUSHBUFFERED", "rtsp://10.0.0.1/1", [("CSeq", "11"), ("Content-Type", "application/x-apple-binary-plist")], flush),
        request("TEARDOWN", "rtsp://10.0.0.1/1", [("CSeq", "13"), ("Content-Type", "application/x-apple-binary-plist")],
                plistlib.dumps({"streams": [{"type": kind}]}, fmt=plistlib.FMT_BINARY)),
        request("TEARDOWN", "rtsp://10.0.0.1/1", [("CSeq", "15")]),
    ])
    add("rtsp-session", ap2)
    add("control-request", ap2)
for plist in (ap2_session_setup, ap2_streams(96), ap2_streams(103), anchor, flush, peers):
    add("airplay2-setup", plist)
    add("plist", plist)
playback_info = plistlib.dumps({"duration": 120.5, "position": 10.0, "rate": 1.0, "readyToPlay": True, "playbackBufferEmpty": False,
                                "loadedTimeRanges": [{"start": 0.0, "duration": 30.0}], "seekableTimeRanges": [{"start": 0.0, "duration": 120.5}]})
add("airplay2-setup", playback_info)
# POST /command: a remote command as airplayd writes it, and a sender's supported commands.
remote_command = plistlib.dumps({"type": "sendMediaRemoteCommand", "value": "nitm", "modernMediaRemoteCommand": "4",
                                 "params": {"kMRMediaRemoteOptionCommandID": "5A1C3E5F-0000-4000-8000-000000000001",
                                            "kMRMediaRemoteOptionSendOptionsNumber": 0,
                                            "kMRMediaRemoteOptionIsRedirectingCommand": True}}, fmt=plistlib.FMT_BINARY)
supported = plistlib.dumps({"type": "updateMRSupportedCommands", "params": {"mrSupportedCommandsFromSender": [
    plistlib.dumps({"kCommandInfoCommandKey": number, "kCommandInfoEnabledKey": number != 3}, fmt=plistlib.FMT_BINARY)
    for number in (0, 1, 2, 3, 4, 5, 25)]}}, fmt=plistlib.FMT_BINARY)
for plist in (remote_command, supported):
    add("airplay2-setup", plist)
add("plist", playback_info)
add("plist", plistlib.dumps({"a": [1, 2.5, True, b"\x00\x01", "text", {"nested": {"deeper": [0, -1, 1 << 62]}}]}, fmt=plistlib.FMT_BINARY))

video = b"".join([
    request("GET", "/server-info", [("X-Apple-Device-ID", "0xaabbccddeeff")], version="HTTP/1.1"),
    request("POST", "/play", [("Content-Type", "text/parameters"), ("X-Apple-Session-ID", "5B1C8D46")],
            "Content-Location: http://10.0.0.2:7001/movie.m3u8\nStart-Position: 0.25\n", version="HTTP/1.1"),
    request("POST", "/scrub?position=20.5", version="HTTP/1.1"),
    request("POST", "/rate?value=0.000000", version="HTTP/1.1"),
    request("GET", "/playback-info", version="HTTP/1.1"),
    request("PUT", "/setProperty?selectedMediaArray", [("Content-Type", "application/x-apple-binary-plist")],
            plistlib.dumps({"value": [{"type": "public.audible", "name": "English"}]}, fmt=plistlib.FMT_BINARY), version="HTTP/1.1"),
    request("POST", "/pair-setup", [("Content-Type", "application/octet-stream")], bytes.fromhex("000100060101"), version="HTTP/1.1"),
    request("POST", "/stop", version="HTTP/1.1"),
])
add("control-request", video)
add("control-request", b"GET /info HTTP/1.1\nHost: box\n\n")
add("control-request", b"\r\n\r\nPOST /feedback RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 5\r\n\r\nhello")

# sender-response: what receivers answer.
def response(status, reason, headers=(), body=b"", version="RTSP/1.0"):
    lines = [f"{version} {status} {reason}"] + [f"{k}: {v}" for k, v in headers]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
add("sender-response", response(200, "OK", [("CSeq", "2"), ("Public", "ANNOUNCE, SETUP, RECORD, PAUSE, FLUSH, TEARDOWN, OPTIONS, GET_PARAMETER, SET_PARAMETER"),
                                            ("Apple-Response", "wUft/bz6P+Z0JoxOCMNId0Fw03Q")]) +
    response(200, "OK", [("CSeq", "6"), ("Session", "1"), ("Transport", "RTP/AVP/UDP;unicast;mode=record;server_port=6000;control_port=6001;timing_port=6002")]))
add("sender-response", response(401, "Unauthorized", [("CSeq", "4"), ("WWW-Authenticate", 'Digest realm="raop", nonce="abc123"')]))
add("sender-response", response(200, "OK", [("Content-Type", "text/x-apple-plist+xml")], plistlib.dumps({"duration": 10.0, "position": 1.0}), "HTTP/1.1"))
add("sender-response", response(101, "Switching Protocols", [("Upgrade", "PTTH/1.0"), ("Connection", "Upgrade")], version="HTTP/1.1"))

for s in sdps:
    add("sdp", s)
for t in ["RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=6001;timing_port=6002",
          "RTP/AVP/UDP;unicast;mode=record;server_port=53561;control_port=63379;timing_port=50607", "seq=1000;rtptime=352000",
          "RTP/AVP/TCP;unicast;interleaved=0-1;mode=record", "x;seq=65535;rtptime=4294967295"]:
    add("rtsp-transport", t)

for v in vector("raop-packets.json")["vectors"]:
    add("raop-packet", bytes.fromhex(v["bytes"]))
for m in vector("ptp.json")["messages"]:
    add("ptp", bytes.fromhex(m["hex"]))
for v in vector("raop-dmap.json")["vectors"]:
    add("dmap", bytes.fromhex(v["bytes"]))
for r in vector("txt-records.json"):
    add("txt-record", cut(r["instanceName"].encode(), "\0".join(r["txt"]).encode()))
for c in ["/ctrl-int/1/playpause", "/ctrl-int/1/nextitem", "/ctrl-int/1/setproperty?dmcp.device-volume=-20.000000",
          "/ctrl-int/1/getproperty?properties=dmcp.volume", "play", "pause", "seek:30.5", "volume:55", "next", "stop"]:
    add("remote-command", c)

play_bodies = [(0, plistlib.dumps({"Content-Location": "http://10.0.0.2/a.m3u8", "Start-Position-Seconds": 12.5, "rate": 1.0,
                                   "httpHeaders": {"Cookie": "a=b"}, "uuid": "5B1C8D46"}, fmt=plistlib.FMT_BINARY)),
               (1, b"Content-Location: https://example.com/movie.mp4\nStart-Position: 0.5\n"),
               (2, b"Content-Location: http://[fe80::1%25eth0]:80/x\r\n")]
for kind, body in play_bodies:
    add("play-request", bytes([kind]) + body)
fcup = vector("video-fcup.json")
for a in fcup["actions"]:
    add("video-action", bytes.fromhex(a["plist"]))
for r in fcup["requests"]:
    add("video-action", r["xml"])
with open(os.path.join(root, "systemd", "airplayd.toml"), "rb") as f:
    add("config", f.read())
add("config", b'name = "Living Room"\nport = 7000\n[mqtt]\nhost = "127.0.0.1"\nport = 1883\ntopic = "airplayd"\narray = [[1, 2], ["a"]]\n')

pairing = vector("pairing.json")
for name, value in pairing["pair_setup_pin_1234"].items():
    if name.endswith("_tlv"):
        add("tlv8", bytes.fromhex(value))
for key, value in pairing["pair_verify"].items():
    if key.endswith("_tlv"):
        add("tlv8", bytes.fromhex(value))
ps = pairing["pair_setup_pin_1234"]
add("pair-setup", b"\x01" + cut(bytes.fromhex(ps["M3_tlv"]), bytes.fromhex(ps["M5_tlv"]), b""))
add("pair-setup", b"\x00" + cut(bytes.fromhex(ps["M1_tlv"]), bytes.fromhex(ps["M3_tlv"]), b""))
tr = pairing["transient_pin_3939"]
add("pair-setup", b"\x03" + cut(bytes.fromhex(tr["M3_tlv"]), b"", b""))
pv = pairing["pair_verify"]
add("pair-verify", cut(bytes.fromhex(pv["M1_tlv"]), bytes.fromhex(pv["M3_tlv"])))
add("pairing-client", cut(bytes.fromhex(ps["M2_tlv"]), bytes.fromhex(ps["M4_tlv"]), bytes.fromhex(ps["M6_tlv"]), bytes.fromhex(pv["M2_tlv"])))
add("pairing-client", cut(bytes.fromhex(ps["M2_tlv"]), bytes.fromhex(ps["M4_wrong_pin_tlv"]), b"", b""))
events = vector("airplay2-audio.json")["events"]
add("encrypted-frames", cut(bytes.fromhex(events["receiverWrites"]), b"\x10\x00", b"\x00" * 18))
datastream = vector("datastream.json")
request_bytes, reply_bytes, long_bytes = (bytes.fromhex(datastream[k]) for k in ("request", "reply", "longRequest"))
add("data-stream", cut(request_bytes[:20], request_bytes[20:] + reply_bytes, long_bytes[:500], long_bytes[500:]))
add("data-stream", cut(b"", b"", b"", request_bytes))
for v in datastream["vectors"][:1]:
    add("airplay2-setup", bytes.fromhex(v["setup"]))
for v in vector("media-remote.json")["vectors"]:
    add("airplay2-setup", bytes.fromhex(v["body"]))

fixtures = os.path.join(root, "Tests", "AirPlayHLSTests", "Fixtures")
for name in sorted(os.listdir(fixtures)):
    with open(os.path.join(fixtures, name), "rb") as f:
        add("hls-playlist", f.read())
for a in ['BANDWIDTH=1280000,AVERAGE-BANDWIDTH=1000000,CODECS="avc1.4d401f,mp4a.40.2",RESOLUTION=1280x720,FRAME-RATE=29.970',
          'METHOD=AES-128,URI="https://k.example/key",IV=0x00000000000000000000000000000001', "1920x1080", "1024@2048"]:
    add("hls-attributes", a)
for q in ["RESOLUTION <= 1920x1080 && CODECS ~ \"hvc1\"", "!(BANDWIDTH > 5000000) || VIDEO-RANGE == PQ", "FRAME-RATE >= 50"]:
    add("variant-qualifier", q)

alac = vector("raop-alac-frames.json")
for p in alac.get("packets", [])[:6]:
    add("alac", bytes([0, 0, 1, 40, 10, 14]) + cut(base64.b64decode(p["alac"]), b""))

shutil.rmtree(corpus, ignore_errors=True)
for target, items in sorted(seeds.items()):
    folder = os.path.join(corpus, target)
    os.makedirs(folder)
    for data in items:
        with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
    print(f"{target}: {len(items)} seeds")
