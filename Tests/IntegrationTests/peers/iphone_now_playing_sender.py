#!/usr/bin/env python3
"""An iPhone-like AirPlay 2 sender that says what plays the way an iPhone does to a receiver
with feature bit 50: MediaRemote plists on `POST /command` over the session's encrypted control
connection, and no DMAP text, artwork or progress at all. Written from the documented facts
(Protocol/now-playing.md section 7: Music Assistant's capture of an iPhone session, shairport-sync
5.3's reader), not from any implementation.

usage: iphone_now_playing_sender.py PORT DEVICE_ID FEATURES FILE COVER_A COVER_B

pyatv 0.18 (PyPI) does the AirPlay 2 work (transient pairing, the encrypted connection, the two
SETUPs, the event channel, the audio) for the receiver's `ft`; its DMAP metadata calls are
silenced. After RECORD, in steps a few seconds apart, each announced on stdout ("STEP name"):

- first: the five messages in an iPhone's order (an empty `replace` first, as iPhones send,
  then DEVICE_INFO, the item with cover A, the commands it takes (next enabled, previous not),
  the playback state, the now-playing client);
- patch: an `update` that changes the album alone;
- track: a new item (`replace`, cover B by bytes), and the commands again (previous enabled,
  next not);
- paused: `updateMRPlaybackState` 2.
Then the file plays out; the last line is JSON {"ok": true} or the error.
"""
import asyncio
import datetime
import json
import plistlib
import sys
from ipaddress import ip_address

import pyatv
from pyatv.conf import AppleTV, ManualService
from pyatv.const import Protocol
from pyatv.storage.memory_storage import MemoryStorage
from pyatv.support import rtsp

P = "kMRMediaRemoteNowPlayingInfo"
STEP_SECONDS = 3.0


def command_entry(number, enabled):
    return plistlib.dumps({"kCommandInfoCommandKey": number, "kCommandInfoEnabledKey": enabled}, fmt=plistlib.FMT_BINARY)


def supported(enabled_numbers):
    return {"type": "updateMRSupportedCommands", "params": {"mrSupportedCommandsFromSender": [
        command_entry(number, number in enabled_numbers) for number in range(6)]}}


def now_playing(policy, fields):
    return {"type": "updateMRNowPlayingInfo", "params": {"type": "npi-text", "mergePolicy": policy, "params": fields}}


def state(number):
    return {"type": "updateMRPlaybackState", "params": {"mrPlaybackState": number}}


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


# DEVICE_INFO: a ProtocolMessage (1: type 15) with a DeviceInfoMessage (field 20: 1 unique id,
# 2 name), behind its varint length.
DEVICE = bytes([0x0A, 4]) + b"AB12" + bytes([0x12, 6]) + b"iPhone"
MESSAGE = bytes([0x08, 0x0F, 0xA2, 0x01, len(DEVICE)]) + DEVICE
DEVICE_INFO = {"params": {"data": bytes([len(MESSAGE)]) + MESSAGE}}
# NowPlayingClient: 2 bundle identifier, 7 display name.
CLIENT = {"type": "updateMRNowPlayingClient", "params": {
    "mrNowPlayingClient": bytes([0x12, 15]) + b"com.apple.Music" + bytes([0x3A, 5]) + b"Music"}}


async def sequence(session, covers):
    async def post(body):
        response = await session.exchange("POST", uri="/command", body=body, allow_error=True)
        if response.code != 200:
            raise RuntimeError(f"POST /command answered {response.code}")

    await asyncio.sleep(0.3)
    first = {P + "Title": "Phone Song", P + "Artist": "Phone Artist", P + "Album": "Phone Album", P + "Duration": 200.0,
             P + "ElapsedTime": 30.0, P + "PlaybackRate": 1.0, P + "DefaultPlaybackRate": 1.0,
             P + "Timestamp": utc_now() - datetime.timedelta(seconds=2), P + "UniqueIdentifier": 1001,
             P + "ArtworkData": covers[0], P + "ArtworkMIMEType": "image/jpeg", P + "ArtworkIdentifier": "cover-a",
             P + "MediaType": "MRMediaRemoteMediaTypeMusic"}
    for body in [now_playing("replace", {}), DEVICE_INFO, now_playing("replace", first), supported({0, 1, 2, 3, 4}),
                 state(1), CLIENT]:
        await post(body)
    print("STEP first", flush=True)
    await asyncio.sleep(STEP_SECONDS)
    await post(now_playing("update", {P + "Album": "Patched Album"}))
    print("STEP patch", flush=True)
    await asyncio.sleep(STEP_SECONDS)
    track = {P + "Title": "Second Song", P + "Artist": "Phone Artist", P + "Album": "Patched Album", P + "Duration": 150.0,
             P + "ElapsedTime": 0.0, P + "PlaybackRate": 1.0, P + "Timestamp": utc_now(), P + "UniqueIdentifier": 1002,
             P + "ArtworkData": covers[1], P + "ArtworkMIMEType": "image/png", P + "ArtworkIdentifier": "cover-b"}
    await post(now_playing("replace", track))
    await post(supported({0, 1, 2, 3, 5}))
    print("STEP track", flush=True)
    await asyncio.sleep(STEP_SECONDS)
    await post(state(2))
    print("STEP paused", flush=True)


async def main() -> None:
    port, identifier, features, path, cover_a, cover_b = sys.argv[1:7]
    covers = [open(cover_a, "rb").read(), open(cover_b, "rb").read()]

    # An iPhone with a bit-50 receiver sends no DMAP, artwork or progress.
    async def silent(*_args, **_kwargs):
        return None

    rtsp.RtspSession.set_metadata = silent
    rtsp.RtspSession.set_artwork = silent
    plain_parameter = rtsp.RtspSession.set_parameter

    async def parameter(self, name, value):
        return None if name == "progress" else await plain_parameter(self, name, value)

    rtsp.RtspSession.set_parameter = parameter
    tasks = []
    plain_record = rtsp.RtspSession.record

    async def record(self, *args, **kwargs):
        response = await plain_record(self, *args, **kwargs)
        tasks.append(asyncio.ensure_future(sequence(self, covers)))
        return response

    rtsp.RtspSession.record = record

    properties = {"cn": "0,1", "et": "0,1", "md": "0,1,2", "sf": "0x4", "am": "airplayd1,1", "tp": "UDP", "vn": "65537",
                  "vs": "366.0", "ft": features}
    config = AppleTV(ip_address("127.0.0.1"), "receiver")
    config.add_service(ManualService(identifier, Protocol.RAOP, int(port), properties))
    atv = await pyatv.connect(config, asyncio.get_running_loop(), protocol=Protocol.RAOP, storage=MemoryStorage())
    try:
        await asyncio.wait_for(atv.stream.stream_file(path), 90)
        if not tasks:
            raise RuntimeError("RECORD was never sent")
        await asyncio.wait_for(tasks[0], 30)
        print(json.dumps({"ok": True}), flush=True)
    except Exception as error:  # noqa: BLE001 - the test reads the reason
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}), flush=True)
    finally:
        atv.close()


asyncio.run(main())
