#!/usr/bin/env python3
"""Writes Protocol/vectors/media-remote.json: the POST /command bodies a sender posts to a
receiver with feature bit 50, as binary plists made by Python's plistlib (an encoder nobody
here wrote), in the shapes documented from an iPhone's session (Protocol/now-playing.md §7).

usage: tools/lib/make_media_remote_vectors.py > Protocol/vectors/media-remote.json
"""
import datetime
import json
import plistlib

P = "kMRMediaRemoteNowPlayingInfo"
# A tiny JPEG-looking cover (the start of a JFIF file and its end): its bytes are what matter.
COVER = bytes.fromhex("ffd8ffe000104a46494600010100000100010000ffd9")
STAMP = datetime.datetime(2026, 12, 7, 12, 0, 0)   # naive = UTC for plistlib


def body(plist):
    return plistlib.dumps(plist, fmt=plistlib.FMT_BINARY).hex()


def entry(number, enabled, options=None):
    info = {"kCommandInfoCommandKey": number, "kCommandInfoEnabledKey": enabled}
    if options is not None:
        info["kCommandInfoOptionsKey"] = options
    return plistlib.dumps(info, fmt=plistlib.FMT_BINARY)


vectors = [
    {"what": "the first message of an iPhone's session: a replace with nothing in it",
     "body": body({"type": "updateMRNowPlayingInfo", "params": {"type": "npi-text", "mergePolicy": "replace", "params": {}}}),
     "kind": "nowPlaying", "mergePolicy": "replace", "empty": True},
    {"what": "a whole item: text, times, the cover's bytes, as an iPhone sends it",
     "body": body({"type": "updateMRNowPlayingInfo", "params": {"type": "npi-text", "mergePolicy": "replace", "params": {
         P + "Title": "Gear: Chapter 6", P + "Artist": "Articles of Interest", P + "Album": "26 November 2025",
         P + "Genre": "Podcast", P + "Composer": "Avery Trufelman",
         P + "Duration": 3076.752, P + "ElapsedTime": 49.955699958, P + "PlaybackRate": 1.0, P + "DefaultPlaybackRate": 1.0,
         P + "Timestamp": STAMP, P + "UniqueIdentifier": 8123456789, P + "TrackNumber": 6, P + "TotalTrackCount": 12,
         P + "QueueIndex": 0, P + "TotalQueueCount": 1, P + "ArtworkData": COVER, P + "ArtworkMIMEType": "image/jpeg",
         P + "ArtworkIdentifier": "a1b2c3", P + "ContentItemIdentifier": "ci-1", P + "MediaType": "MRMediaRemoteMediaTypeMusic",
         P + "IsAlwaysLive": False, P + "IsInTransition": False, P + "SomethingNew": "ignored"}}}),
     "kind": "nowPlaying", "mergePolicy": "replace", "empty": False,
     "expect": {"title": "Gear: Chapter 6", "artist": "Articles of Interest", "album": "26 November 2025", "genre": "Podcast",
                "composer": "Avery Trufelman", "duration": 3076.752, "elapsedTime": 49.955699958, "playbackRate": 1.0,
                "timestampSinceReferenceDate": (STAMP - datetime.datetime(2001, 1, 1)).total_seconds(),
                "uniqueIdentifier": 8123456789, "trackNumber": 6, "artworkHex": COVER.hex(), "artworkIdentifier": "a1b2c3"}},
    {"what": "a patch: the album alone; mergePolicy update",
     "body": body({"type": "updateMRNowPlayingInfo", "params": {"type": "npi-text", "mergePolicy": "update", "params": {P + "Album": "Patched"}}}),
     "kind": "nowPlaying", "mergePolicy": "update", "empty": False, "expect": {"album": "Patched"}},
    {"what": "no mergePolicy: Apple's receivers take it as update",
     "body": body({"type": "updateMRNowPlayingInfo", "params": {"type": "npi-text", "params": {P + "ElapsedTime": 12}}}),
     "kind": "nowPlaying", "mergePolicy": "update", "empty": False, "expect": {"elapsedTime": 12.0}},
    {"what": "the playback state: paused",
     "body": body({"type": "updateMRPlaybackState", "params": {"mrPlaybackState": 2}}), "kind": "playbackState", "state": 2},
    {"what": "the commands an iPhone's Music app takes (options as captured), next disabled",
     "body": body({"type": "updateMRSupportedCommands", "params": {"mrSupportedCommandsFromSender": [
         entry(26, True, {"kMRMediaRemoteCommandInfoShuffleMode": 1}), entry(25, True, {"kMRMediaRemoteCommandInfoRepeatMode": 1}),
         entry(24, True, {"kMRMediaRemoteCommandInfoCanBeControlledByScrubbingKey": False}), entry(4, False),
         entry(5, True), entry(2, True), entry(1, True), entry(0, True)]}}),
     "kind": "supportedCommands", "enabled": [0, 1, 2, 5, 24, 25, 26]},
    {"what": "DEVICE_INFO: no type, a MediaRemote protocol message (varint length + protobuf) in params.data",
     "body": body({"params": {"data": bytes([6, 0x08, 0x0F, 0xA2, 0x01, 0x00, 0x00])}}), "kind": "other"},
    {"what": "updateMRNowPlayingClient: the app, a NowPlayingClient protobuf (2: bundle identifier, 7: display name)",
     "body": body({"type": "updateMRNowPlayingClient", "params": {"mrNowPlayingClient": bytes([0x12, 15]) + b"com.apple.Music" + bytes([0x3A, 5]) + b"Music"}}),
     "kind": "other"},
]

print(json.dumps({
    "what": "POST /command bodies to a receiver with feature bit 50 (binary plists, hex). kind nowPlaying: updateMRNowPlayingInfo "
            "(params.type npi-text, params.mergePolicy replace|update, update when missing, params.params the "
            "kMRMediaRemoteNowPlayingInfo keys; expect lists some fields read); playbackState: updateMRPlaybackState "
            "params.mrPlaybackState (1 playing, 2 paused, 3 stopped, 4 interrupted); supportedCommands: enabled MediaRemote numbers; "
            "other: answered and not read.",
    "generator": "tools/lib/make_media_remote_vectors.py",
    "vectors": vectors}, indent=1))
