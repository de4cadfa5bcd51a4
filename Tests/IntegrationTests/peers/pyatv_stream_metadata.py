#!/usr/bin/env python3
"""Streams an audio file over RAOP with pyatv (PyPI), with text metadata and a JPEG cover.

atvremote's stream_file sends only what the file's tags say; this passes pyatv's
MediaMetadata with artwork, as an app using pyatv would, so a receiver's metadata pipe sees
the DMAP items and the picture.

usage: pyatv_stream_metadata.py ADDRESS PORT DEVICE_ID TXT FILE ARTWORK_JPEG
TXT is the _raop._tcp record as "k=v|k=v" (what --service-properties takes).
"""
import asyncio
import json
import sys
from ipaddress import ip_address

import pyatv
from pyatv.conf import AppleTV, ManualService
from pyatv.const import Protocol
from pyatv.interface import MediaMetadata
from pyatv.storage.memory_storage import MemoryStorage


async def main() -> None:
    address, port, identifier, txt, path, artwork = sys.argv[1:7]
    properties = dict(item.split("=", 1) for item in txt.split("|") if "=" in item)
    config = AppleTV(ip_address(address), "receiver")
    config.add_service(ManualService(identifier, Protocol.RAOP, int(port), properties))
    loop = asyncio.get_running_loop()
    atv = await pyatv.connect(config, loop, protocol=Protocol.RAOP, storage=MemoryStorage())
    try:
        with open(artwork, "rb") as cover:
            metadata = MediaMetadata(title="Sweep Song", artist="Test Artist", album="Test Album", artwork=cover.read())
        await asyncio.wait_for(atv.stream.stream_file(path, metadata=metadata), 60)
        print(json.dumps({"ok": True}))
    except Exception as error:  # noqa: BLE001 - the test reads the reason
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}))
    finally:
        atv.close()


asyncio.run(main())
