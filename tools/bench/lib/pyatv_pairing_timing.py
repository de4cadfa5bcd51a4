#!/usr/bin/env python3
"""pyatv's own pairing client against a receiver, timed in-process (Python's start-up left out).

usage: pyatv_pairing_timing.py PORT DEVICE_ID FEATURES PIN RUNS
prints one JSON line: the seconds of each pair-setup (connect → M6 read) and of each
pair-verify plus one encrypted GET /info (connect → its reply), with pyatv's credentials.
"""
import asyncio
import json
import sys
import time

import pyatv
from pyatv.auth.hap_pairing import parse_credentials
from pyatv.conf import AppleTV, ManualService
from pyatv.const import Protocol
from pyatv.protocols.airplay.auth import verify_connection
from pyatv.storage.memory_storage import MemoryStorage
from pyatv.support.http import http_connect


async def main() -> None:
    port, device_id, features, pin, runs = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    loop = asyncio.get_running_loop()
    setups, verifies = [], []
    credentials = None
    for _ in range(runs):
        config = AppleTV("127.0.0.1", "Bench")
        config.add_service(ManualService(device_id, Protocol.AirPlay, port,
                                         {"deviceid": device_id, "features": features, "flags": "0x204"}))
        started = time.perf_counter()
        pairing = await pyatv.pair(config, Protocol.AirPlay, loop, storage=MemoryStorage())
        await pairing.begin()
        pairing.pin(pin)
        await pairing.finish()
        setups.append(time.perf_counter() - started)
        credentials = pairing.service.credentials
        await pairing.close()
    for _ in range(runs):
        started = time.perf_counter()
        connection = await http_connect("127.0.0.1", port)
        await verify_connection(parse_credentials(credentials), connection)
        response = await connection.send_and_receive("GET", "/info", allow_error=True)
        verifies.append(time.perf_counter() - started)
        assert response.code == 200, response
        connection.close()
    print(json.dumps({"setup_s": setups, "verify_s": verifies}))


asyncio.run(main())
