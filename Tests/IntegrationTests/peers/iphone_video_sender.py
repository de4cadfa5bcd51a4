#!/usr/bin/env python3
"""An iPhone handing a video over to an AirPlay receiver, written from the documented facts
(UxPlay 1.73.6's http_handlers.h, fcup_request.h and airplay_video.c; apsdk; UxPlay's issues;
Protocol/video.md §7): no code of theirs.

Two roles:

  iphone_video_sender.py origin MEDIA_DIR
      YouTube's origin: serves a video's segments under YouTube-like paths,
      /videoplayback/itag/ITAG/govp/ANY/gosq/K -> MEDIA_DIR/<stream of ITAG>/<segment K>.
      Prints its port on the first line. Streams (TestMedia's groups layout): itag 136 -> s2
      (video), 140 -> sEnglish, 141 -> sFrench. Any other path is a file of MEDIA_DIR (the
      plain HLS a Safari-style hand-over names).

  iphone_video_sender.py phone HOST PORT --origin URL --media MEDIA_DIR [--mode youtube|url]
                         [--event-replies http|event] [--report FILE]
      The phone. Connection 1: POST /reverse (PTTH/1.0), then it answers the receiver's requests
      on it: state events with 200, and each unhandledURLRequest (FCUP) with 200 and then a
      POST /action on connection 2 carrying the playlist. Connection 2: GET /server-info, a
      binary-plist POST /play (youtube: Content-Location mlhls://localhost/master.m3u8, the
      playlists built from MEDIA_DIR with YouTube's condensed segment lines pointing at the
      origin; url: Safari's form, the origin's own http:// master), PUT /setProperty as iOS 18
      does, POST /rate, GET /playback-info once a second, a scrub to 24 s, rate 0 and 1,
      POST /stop. It prints one JSON line: what it measured and what the receiver did.
      With --rtsp it first opens the usual RTSP connection as a phone does (pyatv's transient
      pair-verify, AirPlay 2 SETUP phase 1) and then stays silent on it, as iOS 27 does while a
      video plays (no /feedback); the report says whether that connection was still open at
      the end (rtspOpenAtEnd). --mode hostile: /fp-setup2, a FairPlay-protected hand-over, and
      a playlistRemove while a playlist request is unanswered, answered late after it. --mode
      queue: an item near its end, the next queued with playlistInsert, played when it ends.
      --mode start-youtube|start-url (benchmarks): /play to the first position past 0.

At most 20 header fields a request (UxPlay refuses more).
"""
import http.server
import json
import os
import plistlib
import re
import socket
import socketserver
import sys
import threading
import time
import uuid

STREAMS = {"136": "groups/s2", "140": "groups/sEnglish", "141": "groups/sFrench"}


# ---------------------------------------------------------------- the origin

class Origin(http.server.BaseHTTPRequestHandler):
    media = ""
    pattern = re.compile(r"^/videoplayback/itag/(\d+)/govp/[^/]+/gosq/(\d+)$")

    def do_GET(self):
        match = self.pattern.match(self.path)
        if not match:
            return self.static()
        stream = STREAMS.get(match.group(1))
        if not stream:
            self.send_error(404)
            return
        segments = media_segments(os.path.join(self.media, stream, "index.m3u8"))
        index = int(match.group(2))
        if index >= len(segments):
            self.send_error(404)
            return
        with open(os.path.join(self.media, stream, segments[index][1]), "rb") as handle:
            data = handle.read()
        self.send_response(200)
        self.send_header("Content-Type", "video/mp2t")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def static(self):
        path = os.path.normpath(os.path.join(self.media, self.path.split("?")[0].lstrip("/")))
        if not path.startswith(os.path.abspath(self.media) + "/") or not os.path.isfile(path):
            self.send_error(404)
            return
        data = open(path, "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.apple.mpegurl" if path.endswith(".m3u8") else "video/mp2t")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def serve_origin(media: str) -> None:
    Origin.media = os.path.abspath(media)
    server = socketserver.ThreadingTCPServer(("0.0.0.0", 0), Origin)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


def media_segments(path: str):
    """(duration, file) of each segment of an ffmpeg media playlist."""
    lines = open(path).read().splitlines()
    result = []
    for number, line in enumerate(lines):
        if line.startswith("#EXTINF:"):
            result.append((float(line[8:].split(",")[0]), lines[number + 1].strip()))
    return result


# ---------------------------------------------------------------- the phone's playlists

def phone_playlists(media: str, origin: str) -> dict:
    """What YouTube's app would hand over: an mlhls master and condensed media playlists."""
    master = (
        "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n"
        '#EXT-X-MEDIA:URI="mlhls://localhost/itag/140/mediadata.m3u8",TYPE=AUDIO,GROUP-ID="aud",LANGUAGE="en",'
        'NAME="English",DEFAULT=YES,AUTOSELECT=YES\n'
        '#EXT-X-MEDIA:URI="mlhls://localhost/itag/141/mediadata.m3u8",TYPE=AUDIO,GROUP-ID="aud",LANGUAGE="fr",'
        'NAME="French",DEFAULT=NO,AUTOSELECT=YES\n'
        '#EXT-X-STREAM-INF:BANDWIDTH=400000,CODECS="avc1.42c00d,mp4a.40.2",RESOLUTION=320x180,AUDIO="aud"\n'
        "mlhls://localhost/itag/136/mediadata.m3u8\n"
    )
    playlists = {"mlhls://localhost/master.m3u8": master}
    for itag, stream in STREAMS.items():
        segments = media_segments(os.path.join(media, stream, "index.m3u8"))
        text = "#EXTM3U\n"
        # YouTube writes the condensed form's tag on the line after #EXTM3U.
        text += f'#YT-EXT-CONDENSED-URL:BASE-URI="{origin}/videoplayback/itag/{itag}",PARAMS="govp,gosq",PREFIX="s/"\n'
        text += "#EXT-X-VERSION:3\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        text += f"#EXT-X-TARGETDURATION:{int(max(d for d, _ in segments) + 0.999)}\n#EXT-X-MEDIA-SEQUENCE:0\n"
        offset = 0
        for index, (duration, _) in enumerate(segments):
            text += f"#EXTINF:{duration:.3f},\ns/slices%3D{offset}-{offset + 99999}/{index}\n"
            offset += 100000
        text += "#EXT-X-ENDLIST\n"
        playlists[f"mlhls://localhost/itag/{itag}/mediadata.m3u8"] = text
    return playlists


# ---------------------------------------------------------------- HTTP over raw sockets

def read_message(sock, buffer: bytearray, timeout: float):
    """One HTTP message (request or reply) from a socket: (first line, headers, body)."""
    sock.settimeout(timeout)
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffer.extend(chunk)
    end = buffer.index(b"\r\n\r\n")
    head = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    del buffer[:end + 4]
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(buffer) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffer.extend(chunk)
    body = bytes(buffer[:length])
    del buffer[:length]
    return head[0], headers, body


class Phone:
    def __init__(self, host, port, playlists, event_replies):
        self.session = str(uuid.uuid4()).upper()
        self.playlists = playlists
        self.event_replies = event_replies
        self.lock = threading.Lock()
        self.control = socket.create_connection((host, port), timeout=10)
        self.control_buffer = bytearray()
        self.reverse = socket.create_connection((host, port), timeout=10)
        self.reverse_buffer = bytearray()
        self.fcup = []      # (request id, url, /action status)
        self.withheld = {}  # url -> the unanswered request, for URLs in `withhold`
        self.withhold = set()
        self.events = []    # state events
        self.errors = []

    def request(self, method, path, body=b"", content_type=None, extra=()):
        head = f"{method} {path} HTTP/1.1\r\nX-Apple-Session-ID: {self.session}\r\n"
        head += "User-Agent: AirPlay/860.7.1\r\nX-Apple-Device-ID: 0xaabbccddee01\r\n"
        for name, value in extra:
            head += f"{name}: {value}\r\n"
        if content_type:
            head += f"Content-Type: {content_type}\r\n"
        head += f"Content-Length: {len(body)}\r\n\r\n"
        with self.lock:
            self.control.sendall(head.encode() + body)
            line, headers, reply = read_message(self.control, self.control_buffer, 15)
        return int(line.split(" ")[1]), headers, reply

    def open_reverse(self):
        head = (f"POST /reverse HTTP/1.1\r\nUpgrade: PTTH/1.0\r\nConnection: Upgrade\r\nX-Apple-Purpose: event\r\n"
                f"X-Apple-Session-ID: {self.session}\r\nContent-Length: 0\r\n\r\n")
        self.reverse.sendall(head.encode())
        line, _, _ = read_message(self.reverse, self.reverse_buffer, 10)
        if " 101 " not in line + " ":
            raise RuntimeError(f"/reverse answered {line}")
        threading.Thread(target=self.serve_reverse, daemon=True).start()

    def serve_reverse(self):
        while True:
            try:
                line, headers, body = read_message(self.reverse, self.reverse_buffer, 3600)
            except Exception:
                return
            reply = "EVENT/1.0 200 OK" if self.event_replies == "event" else "HTTP/1.1 200 OK"
            self.reverse.sendall(f"{reply}\r\nContent-Length: 0\r\n\r\n".encode())
            try:
                event = plistlib.loads(body) if body else {}
            except Exception as error:
                self.errors.append(f"unreadable event: {error}")
                continue
            if event.get("type") == "unhandledURLRequest":
                threading.Thread(target=self.answer_fcup, args=(event,), daemon=True).start()
            elif "state" in event:
                self.events.append(event["state"])

    def answer_fcup(self, event):
        request = event.get("request", {})
        url, request_id = request.get("FCUP_Response_URL", ""), request.get("FCUP_Response_RequestID")
        if url in self.withhold:
            self.withheld[url] = event
            return
        data = self.playlists.get(url)
        params = {"FCUP_Response_URL": url, "FCUP_Response_RequestID": request_id,
                  "FCUP_Response_StatusCode": 0 if data is not None else 404,
                  "FCUP_Response_Data": (data or "").encode(),
                  "FCUP_Response_Headers": {"Content-Type": "application/vnd.apple.mpegurl"}}
        body = plistlib.dumps({"type": "unhandledURLResponse", "params": params}, fmt=plistlib.FMT_BINARY)
        try:
            status, _, _ = self.request("POST", "/action", body, "application/x-apple-binary-plist")
        except Exception as error:
            self.errors.append(f"/action: {error}")
            status = -1
        self.fcup.append({"id": request_id, "url": url, "status": status})

    def playback_info(self):
        status, _, body = self.request("GET", "/playback-info")
        if status != 200 or not body:
            return {}
        try:
            return plistlib.loads(body)
        except Exception:
            return {}

    def wait(self, seconds):
        """Lets `seconds` pass, asking /playback-info once a second as iOS does meanwhile."""
        deadline = time.time() + seconds
        while time.time() < deadline - 1:
            self.playback_info()
            time.sleep(min(1, max(0, deadline - time.time() - 0.05)))
        time.sleep(max(0, deadline - time.time()))

    def position_when(self, condition, timeout):
        """Polls /playback-info once a second (as iOS does) until `condition(info)`."""
        deadline = time.time() + timeout
        info = {}
        while time.time() < deadline:
            info = self.playback_info()
            if condition(info):
                return info
            time.sleep(1)
        return info


class RTSPSession:
    """The phone's RTSP connection: pyatv's transient pair-verify, then SETUP phase 1."""

    def __init__(self, host, port, session):
        import asyncio
        from pyatv.auth.hap_pairing import TRANSIENT_CREDENTIALS
        from pyatv.protocols.airplay.auth import verify_connection
        from pyatv.support.http import http_connect
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.connection = self.run(http_connect(host, port))
        self.run(verify_connection(TRANSIENT_CREDENTIALS, self.connection))
        body = plistlib.dumps({"timingProtocol": "NTP", "timingPort": 6002, "sessionUUID": session,
                               "deviceID": "AA:BB:CC:DD:EE:01", "name": "iPhone stand-in", "model": "iPhone16,2",
                               "osName": "iPhone OS", "osVersion": "27.0"}, fmt=plistlib.FMT_BINARY)
        self.path = f"rtsp://{host}/{abs(hash(session)) % 10**9}"
        self.status = self.request("SETUP", body).code

    def run(self, coroutine, timeout=15):
        import asyncio
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def request(self, method, body=None):
        self.cseq = getattr(self, "cseq", 0) + 1
        return self.run(self.connection.send_and_receive(
            method, self.path, protocol="RTSP/1.0", headers={"CSeq": str(self.cseq)}, body=body, allow_error=True,
            content_type="application/x-apple-binary-plist" if body else None), 10)

    def still_open(self):
        try:
            return self.request("OPTIONS").code == 200
        except Exception:
            return False


def run_hostile(phone, report, item) -> dict:
    """What a box must survive: FairPlay video, a DRM playlist, and the phone changing quality
    (playlistRemove) while a playlist request is in flight, then answering it late (UxPlay #545)."""
    report["fpSetup2"] = phone.request("POST", "/fp-setup2", b"FPLY\x03\x01\x01\x00\x00\x00\x00\x04\x02\x00\x02\xbb",
                                       "application/octet-stream")[0]
    # A master whose only variant is FairPlay-protected.
    drm = ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://key65\","
           "KEYFORMAT=\"com.apple.streamingkeydelivery\",KEYFORMATVERSIONS=\"1\"\n#EXTINF:2.0,\nhttp://10.79.0.1:9/1.ts\n#EXT-X-ENDLIST\n")
    phone.playlists = {"mlhls://localhost/master.m3u8": "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=400000,RESOLUTION=320x180\n"
                                                        "mlhls://localhost/itag/999/mediadata.m3u8\n",
                       "mlhls://localhost/itag/999/mediadata.m3u8": drm}
    report["drmPlay"] = play(phone, item + "-drm")
    phone.position_when(lambda i: "stopped" in phone.events, 15)
    report["drmEvents"] = list(phone.events)
    phone.events.clear()
    # The quality changes while the media playlist is asked: the item is removed, the answer comes late.
    phone.playlists = dict(phone_playlists_kept)
    phone.withhold = {"mlhls://localhost/itag/136/mediadata.m3u8"}
    report["removePlay"] = play(phone, item)
    deadline = time.time() + 15
    while not phone.withheld and time.time() < deadline:
        time.sleep(0.1)
    report["withheld"] = sorted(phone.withheld)
    remove = plistlib.dumps({"type": "playlistRemove", "params": {"item": {"uuid": item}}}, fmt=plistlib.FMT_BINARY)
    report["playlistRemove"] = phone.request("POST", "/action", remove, "application/x-apple-binary-plist")[0]
    phone.withhold = set()
    for url, event in list(phone.withheld.items()):
        phone.answer_fcup(event)
    report["lateAnswer"] = phone.fcup[-1]["status"] if phone.fcup else None
    report["serverInfoAfter"] = phone.request("GET", "/server-info")[0]
    report["playbackInfoAfter"] = phone.request("GET", "/playback-info")[0]
    return finish(phone, report)


def run_queue(phone, report, origin) -> dict:
    """A playlist: the item plays from 34 s of 40, the next one (Safari's form) is queued with
    playlistInsert, and plays when the first ends, in the same session."""
    report["play"] = play(phone, "ITEM-A", start=34.0)
    phone.position_when(lambda i: i.get("position", 0) >= 34.5, 15)
    item = {"uuid": "ITEM-B", "Content-Location": f"{origin}/groups/master.m3u8", "Start-Position-Seconds": 0.0,
            "clientProcName": "YouTube"}
    body = plistlib.dumps({"type": "playlistInsert", "params": {"item": item}}, fmt=plistlib.FMT_BINARY)
    report["playlistInsert"] = phone.request("POST", "/action", body, "application/x-apple-binary-plist")[0]
    # The first ends about 6 s in; the next then plays from its start.
    nxt = phone.position_when(lambda i: 1.0 <= i.get("position", 0) <= 12, 25)
    report["nextStartedAt"] = round(nxt.get("position", -1), 2)
    phone.wait(3)
    report["nextAdvanced"] = round(phone.playback_info().get("position", -1) - nxt.get("position", 0), 2)
    report["stop"] = phone.request("POST", "/stop")[0]
    return finish(phone, report)


def run_start(phone, report, origin, youtube) -> dict:
    """For the benchmark: seconds from sending /play to the first position past 0, asked every
    50 ms, then /stop."""
    location = "mlhls://localhost/master.m3u8" if youtube else f"{origin}/groups/master.m3u8"
    body = {"Content-Location": location, "Start-Position": 0.0, "Start-Position-Seconds": 0.0,
            "uuid": str(uuid.uuid4()).upper(), "clientProcName": "YouTube" if youtube else "MobileSafari", "rate": 1.0}
    started = time.time()
    report["play"] = phone.request("POST", "/play", plistlib.dumps(body, fmt=plistlib.FMT_BINARY),
                                   "application/x-apple-binary-plist")[0]
    seconds = None
    while time.time() - started < 30:
        if phone.playback_info().get("position", 0) > 0:
            seconds = time.time() - started
            break
        time.sleep(0.05)
    report["firstPosition"] = round(seconds, 3) if seconds is not None else None
    report["stop"] = phone.request("POST", "/stop")[0]
    return finish(phone, report)


def play(phone, item, start=0.0):
    body = {"Content-Location": "mlhls://localhost/master.m3u8", "Start-Position": 0.0, "Start-Position-Seconds": start,
            "uuid": item, "clientProcName": "YouTube", "rate": 1.0}
    return phone.request("POST", "/play", plistlib.dumps(body, fmt=plistlib.FMT_BINARY), "application/x-apple-binary-plist")[0]


phone_playlists_kept = {}


def run_phone(args) -> dict:
    host, port = args[0], int(args[1])
    options = dict(zip(args[2::2], args[3::2]))
    origin, media = options["--origin"], options["--media"]
    mode = options.get("--mode", "youtube")
    playlists = phone_playlists(media, origin)
    phone_playlists_kept.update(playlists)
    phone = Phone(host, port, playlists, options.get("--event-replies", "http"))
    report = {"mode": mode, "session": phone.session}
    rtsp = None
    if options.get("--rtsp") == "yes":
        rtsp = RTSPSession(host, port, phone.session)
        report["rtspSetup"] = rtsp.status
    phone.open_reverse()
    status, _, _ = phone.request("GET", "/server-info")
    report["serverInfo"] = status
    if mode == "hostile":
        return run_hostile(phone, report, str(uuid.uuid4()).upper())
    if mode == "queue":
        return run_queue(phone, report, origin)
    if mode in ("start-youtube", "start-url"):
        return run_start(phone, report, origin, mode == "start-youtube")
    location = "mlhls://localhost/master.m3u8" if mode == "youtube" else f"{origin}/groups/master.m3u8"
    item = str(uuid.uuid4()).upper()
    play = {"Content-Location": location, "Start-Position": 0.0, "Start-Position-Seconds": 0.0, "uuid": item,
            "clientProcName": "YouTube" if mode == "youtube" else "MobileSafari",
            "clientBundleID": "com.google.ios.youtube" if mode == "youtube" else "com.apple.mobilesafari",
            "rate": 1.0, "volume": 1.0, "streamType": 1, "model": "iPhone16,2", "osBuildVersion": "22B83",
            "playbackRestrictions": 0, "SenderMACAddress": "AA:BB:CC:DD:EE:01"}
    started = time.time()
    status, _, body = phone.request("POST", "/play", plistlib.dumps(play, fmt=plistlib.FMT_BINARY),
                                    "application/x-apple-binary-plist")
    report["play"] = status
    if status != 200:
        report["playBody"] = body.decode("latin-1")[:300]
        return finish(phone, report)
    for name in ("actionAtItemEnd", "interstitialEvents", "textMarkupArray"):
        value = {"value": 0} if name == "actionAtItemEnd" else {"value": []}
        status, _, _ = phone.request("PUT", f"/setProperty?{name}", plistlib.dumps(value, fmt=plistlib.FMT_BINARY),
                                     "application/x-apple-binary-plist")
        report[f"setProperty.{name}"] = status
    report["rate1"] = phone.request("POST", "/rate?value=1.000000")[0]
    # Playing: the first position past 0.5 s, then how far it goes in 12 s.
    first = phone.position_when(lambda i: i.get("position", 0) > 0.5, 40)
    report["firstFrameSeconds"] = round(time.time() - started, 2)
    report["duration"] = first.get("duration")
    begin_at, begin = time.time(), first.get("position", 0)
    phone.wait(12)
    later = phone.playback_info()
    report["advanced"] = round(later.get("position", 0) - begin, 2)
    report["advancedOver"] = round(time.time() - begin_at, 2)
    if mode == "url":
        # Safari's hand-over differs only in how the playlists are reached: control as above.
        report["stop"] = phone.request("POST", "/stop")[0]
        return finish(phone, report)
    # A scrub to 24 s lands.
    report["scrub"] = phone.request("POST", "/scrub?position=24.000000")[0]
    landed = phone.position_when(lambda i: 23.5 <= i.get("position", 0) <= 30, 10)
    report["scrubLanded"] = round(landed.get("position", -1), 2)
    # Rate 0 holds the position; rate 1 plays on.
    report["rate0"] = phone.request("POST", "/rate?value=0.000000")[0]
    phone.wait(1.5)
    held = phone.playback_info().get("position", -1)
    phone.wait(2)
    report["heldFor2s"] = round(phone.playback_info().get("position", -1) - held, 2)
    report["rate1Again"] = phone.request("POST", "/rate?value=1.000000")[0]
    resumed = phone.playback_info().get("position", -1)
    phone.wait(2.5)
    report["playedAfterResume"] = round(phone.playback_info().get("position", -1) - resumed, 2)
    report["stop"] = phone.request("POST", "/stop")[0]
    if rtsp:
        report["rtspOpenAtEnd"] = rtsp.still_open()
    return finish(phone, report)


def finish(phone, report):
    time.sleep(0.5)
    report["fcup"] = phone.fcup
    report["events"] = phone.events
    report["errors"] = phone.errors
    return report


if __name__ == "__main__":
    if sys.argv[1] == "origin":
        serve_origin(sys.argv[2])
    else:
        print(json.dumps(run_phone(sys.argv[2:])), flush=True)
