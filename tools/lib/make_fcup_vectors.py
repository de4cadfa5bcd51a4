#!/usr/bin/env python3
"""Test vectors for FCUP, an iPhone's hand-over of a video's playlists (Protocol/vectors/video-fcup.json).

The receiver's request (`POST /event`, `unhandledURLRequest`) is written as an XML plist in the
key order UxPlay 1.73.6 writes (libplist keeps insertion order; ours sorts keys, and a phone reads
either). The phone's answers (`POST /action`) are binary plists written by Python's plistlib (not
by libplist, which our codec uses), as hex: an `unhandledURLResponse` with the playlist's bytes as
a real capture's keys have them (apsdk's log: RequestID 1, StatusCode 0,
URL mlhls://localhost/master.m3u8), `playlistInsert`, `playlistRemove`, and broken bodies with
the part of the reason the codec must give.

Usage: make_fcup_vectors.py [OUT]
"""
import json
import plistlib
import sys

MASTER = (
    "#EXTM3U\n"
    "#EXT-X-INDEPENDENT-SEGMENTS\n"
    '#EXT-X-MEDIA:URI="mlhls://localhost/itag/233/mediadata.m3u8",TYPE=AUDIO,GROUP-ID="233",LANGUAGE="en",'
    'NAME="English",DEFAULT=YES,AUTOSELECT=YES\n'
    '#EXT-X-STREAM-INF:BANDWIDTH=1000000,CODECS="avc1.4d401f,mp4a.40.5",RESOLUTION=1280x720,AUDIO="233"\n'
    "mlhls://localhost/itag/136/mediadata.m3u8\n"
).encode()

SESSION = "6A6E9F1A-3C2B-4D5E-8F70-1A2B3C4D5E6F"
USER_AGENT = "AppleCoreMedia/1.0.0.11B554a (Apple TV; U; CPU OS 7_0_4 like Mac OS X; en_us)"


def request_xml(url: str, request_id: int) -> str:
    """The event as UxPlay writes it (insertion order: sessionID, type, request)."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
        '<plist version="1.0">\n<dict>\n'
        "\t<key>sessionID</key>\n\t<integer>1</integer>\n"
        "\t<key>type</key>\n\t<string>unhandledURLRequest</string>\n"
        "\t<key>request</key>\n\t<dict>\n"
        "\t\t<key>FCUP_Response_ClientInfo</key>\n\t\t<integer>1</integer>\n"
        "\t\t<key>FCUP_Response_ClientRef</key>\n\t\t<integer>40030004</integer>\n"
        f"\t\t<key>FCUP_Response_RequestID</key>\n\t\t<integer>{request_id}</integer>\n"
        f"\t\t<key>FCUP_Response_URL</key>\n\t\t<string>{url}</string>\n"
        "\t\t<key>sessionID</key>\n\t\t<integer>1</integer>\n"
        "\t\t<key>FCUP_Response_Headers</key>\n\t\t<dict>\n"
        f"\t\t\t<key>X-Playback-Session-Id</key>\n\t\t\t<string>{SESSION}</string>\n"
        f"\t\t\t<key>User-Agent</key>\n\t\t\t<string>{USER_AGENT}</string>\n"
        "\t\t</dict>\n\t</dict>\n</dict>\n</plist>\n"
    )


def action(body) -> str:
    return plistlib.dumps(body, fmt=plistlib.FMT_BINARY).hex()


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "Protocol/vectors/video-fcup.json"
    doc = {
        "what": "FCUP, the playlists of a video an iPhone hands over as mlhls://localhost/master.m3u8 (YouTube's app). "
                "requests: the receiver's POST /event body (XML plist, in UxPlay's key order) for a URL and request id; "
                "the codec's FCUPRequest(url, requestID, playbackSessionID) must decode to the same tree. "
                "actions: the phone's POST /action bodies (binary plists by Python's plistlib, hex) and what they read as "
                "(kind: unhandledURLResponse, playlistInsert, playlistRemove, other), or error: a part of the reason for a 400.",
        "generator": "tools/lib/make_fcup_vectors.py",
        "playbackSessionID": SESSION,
        "requests": [
            {"what": "the master, the first request of a video", "url": "mlhls://localhost/master.m3u8", "requestID": 1,
             "xml": request_xml("mlhls://localhost/master.m3u8", 1)},
            {"what": "a media playlist the master names", "url": "mlhls://localhost/itag/136/mediadata.m3u8", "requestID": 2,
             "xml": request_xml("mlhls://localhost/itag/136/mediadata.m3u8", 2)},
        ],
        "actions": [
            {"what": "the master, as a real phone answers (StatusCode 0 is success)",
             "plist": action({"type": "unhandledURLResponse", "params": {
                 "FCUP_Response_URL": "mlhls://localhost/master.m3u8", "FCUP_Response_RequestID": 1,
                 "FCUP_Response_StatusCode": 0, "FCUP_Response_Data": MASTER,
                 "FCUP_Response_Headers": {"Content-Type": "application/vnd.apple.mpegurl"}}}),
             "kind": "unhandledURLResponse", "url": "mlhls://localhost/master.m3u8", "requestID": 1, "statusCode": 0,
             "data": MASTER.decode(), "succeeded": True},
            {"what": "an answer without RequestID or StatusCode (matched by URL, taken as success)",
             "plist": action({"type": "unhandledURLResponse", "params": {
                 "FCUP_Response_URL": "mlhls://localhost/itag/136/mediadata.m3u8", "FCUP_Response_Data": b"#EXTM3U\n"}}),
             "kind": "unhandledURLResponse", "url": "mlhls://localhost/itag/136/mediadata.m3u8", "requestID": None,
             "statusCode": None, "data": "#EXTM3U\n", "succeeded": True},
            {"what": "the phone could not get it (404)",
             "plist": action({"type": "unhandledURLResponse", "params": {
                 "FCUP_Response_URL": "mlhls://localhost/itag/136/mediadata.m3u8", "FCUP_Response_RequestID": 2,
                 "FCUP_Response_StatusCode": 404, "FCUP_Response_Data": b""}}),
             "kind": "unhandledURLResponse", "url": "mlhls://localhost/itag/136/mediadata.m3u8", "requestID": 2,
             "statusCode": 404, "data": "", "succeeded": False},
            {"what": "the next item of the queue",
             "plist": action({"type": "playlistInsert", "params": {"item": {
                 "uuid": "0B1C2D3E-4F50-6172-8394-A5B6C7D8E9F0", "Content-Location": "mlhls://localhost/master.m3u8",
                 "Start-Position-Seconds": 0.0, "clientProcName": "YouTube"}}}),
             "kind": "playlistInsert", "uuid": "0B1C2D3E-4F50-6172-8394-A5B6C7D8E9F0"},
            {"what": "the current item leaves (an ad ended, the quality changed)",
             "plist": action({"type": "playlistRemove", "params": {"item": {"uuid": "0B1C2D3E-4F50-6172-8394-A5B6C7D8E9F0"}}}),
             "kind": "playlistRemove", "uuid": "0B1C2D3E-4F50-6172-8394-A5B6C7D8E9F0"},
            {"what": "a type nobody documented", "plist": action({"type": "playlistReorder", "params": {}}),
             "kind": "other", "type": "playlistReorder"},
            {"what": "no playlist bytes", "plist": action({"type": "unhandledURLResponse", "params": {
                "FCUP_Response_URL": "mlhls://localhost/master.m3u8", "FCUP_Response_RequestID": 1}}),
             "error": "FCUP_Response_Data"},
            {"what": "the bytes as a string, not data", "plist": action({"type": "unhandledURLResponse", "params": {
                "FCUP_Response_URL": "mlhls://localhost/master.m3u8", "FCUP_Response_Data": "#EXTM3U\n"}}),
             "error": "FCUP_Response_Data"},
            {"what": "params is not a dictionary", "plist": action({"type": "unhandledURLResponse", "params": [1, 2]}),
             "error": "params"},
            {"what": "no type", "plist": action({"params": {}}), "error": "type"},
            {"what": "a playlistRemove without a uuid", "plist": action({"type": "playlistRemove", "params": {"item": {}}}),
             "error": "uuid"},
            {"what": "a request id that is not an integer", "plist": action({"type": "unhandledURLResponse", "params": {
                "FCUP_Response_URL": "mlhls://localhost/master.m3u8", "FCUP_Response_RequestID": "1",
                "FCUP_Response_Data": b"#EXTM3U\n"}}),
             "error": "RequestID"},
        ],
    }
    with open(out, "w") as handle:
        json.dump(doc, handle, indent=1)
        handle.write("\n")


if __name__ == "__main__":
    main()
