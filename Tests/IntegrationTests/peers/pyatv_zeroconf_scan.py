#!/usr/bin/env python3
"""Scans for AirPlay devices the way Home Assistant drives pyatv: one shared python-zeroconf
instance whose service browsers fill its cache by multicast, then pyatv.scan(aiozc=...) reads
that cache. Optionally streams a file to the device with a given identifier.

Usage: pyatv_zeroconf_scan.py BROWSE_SECONDS [--stream IDENTIFIER FILE]
Prints one JSON line: {"devices": [{"name", "address", "identifiers", "protocols"}], "streamed": bool}.
"""
import asyncio, json, sys

import pyatv
from pyatv.const import Protocol
from zeroconf import IPVersion
from zeroconf.asyncio import AsyncServiceBrowser, AsyncZeroconf

TYPES = ["_airplay._tcp.local.", "_raop._tcp.local.", "_mediaremotetv._tcp.local.",
         "_companion-link._tcp.local.", "_device-info._tcp.local.", "_sleep-proxy._udp.local."]


async def main():
    seconds = float(sys.argv[1])
    stream = sys.argv[3:5] if len(sys.argv) >= 5 and sys.argv[2] == "--stream" else None
    loop = asyncio.get_running_loop()
    aiozc = AsyncZeroconf(ip_version=IPVersion.V4Only)
    browser = AsyncServiceBrowser(aiozc.zeroconf, TYPES, handlers=[lambda **_: None])
    try:
        await asyncio.sleep(seconds)
        found = await pyatv.scan(loop, timeout=3, aiozc=aiozc)
        devices = [{"name": conf.name, "address": str(conf.address), "identifiers": sorted(conf.all_identifiers),
                    "protocols": sorted(service.protocol.name for service in conf.services)} for conf in found]
        streamed = False
        if stream:
            identifier, path = stream
            conf = next(conf for conf in found if identifier in conf.all_identifiers)
            atv = await pyatv.connect(conf, loop, protocol=Protocol.RAOP)
            try:
                await atv.stream.stream_file(path)
                streamed = True
            finally:
                atv.close()
        print(json.dumps({"devices": devices, "streamed": streamed}))
    finally:
        await browser.async_cancel()
        await aiozc.async_close()


asyncio.run(main())
