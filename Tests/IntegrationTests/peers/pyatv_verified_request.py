#!/usr/bin/env python3
"""One request over an encrypted AirPlay control connection, made with pyatv's own pairing code.

pyatv (PyPI) runs pair-verify with stored HAP credentials, or a transient pair-setup with
"transient", switches its connection to HAP's encrypted frames, then sends METHOD PATH and
prints the status and body as JSON. It also checks that a second request on the same
connection works (the frame counters advance).

usage: pyatv_verified_request.py PORT CREDENTIALS|transient METHOD PATH [BODY_HEX [SECOND_BODY_HEX]]

With a second body, the second request carries it instead of the first's (an AirPlay 2 stream
SETUP after its session SETUP, on the same connection).

METHOD "RTSP:SETUP" (any method after "RTSP:") is sent as RTSP/1.0 with a CSeq, as pyatv
sends its AirPlay 2 SETUPs.
"""
import asyncio
import json
import sys

from pyatv.auth.hap_pairing import TRANSIENT_CREDENTIALS, parse_credentials
from pyatv.protocols.airplay.auth import verify_connection
from pyatv.support.http import http_connect


async def main() -> None:
    port, credentials, method, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    body = bytes.fromhex(sys.argv[5]) if len(sys.argv) > 5 else None
    second = bytes.fromhex(sys.argv[6]) if len(sys.argv) > 6 else body
    connection = await http_connect("127.0.0.1", port)
    try:
        creds = TRANSIENT_CREDENTIALS if credentials == "transient" else parse_credentials(credentials)
        await asyncio.wait_for(verify_connection(creds, connection), 10)
        protocol = "HTTP/1.1"
        if method.startswith("RTSP:"):
            method, protocol = method[5:], "RTSP/1.0"
        results = []
        for cseq, sent in enumerate([body, second]):
            headers = {"CSeq": str(cseq)} if protocol.startswith("RTSP") else None
            response = await asyncio.wait_for(
                connection.send_and_receive(method, path, protocol=protocol, headers=headers, body=sent, allow_error=True,
                                            content_type="application/x-apple-binary-plist" if sent else None), 10)
            payload = response.body if isinstance(response.body, bytes) else str(response.body).encode()
            results.append({"status": response.code, "body_hex": payload.hex(), "body_text": payload.decode("latin-1")})
        print(json.dumps({"ok": True, "responses": results}))
    except Exception as error:  # noqa: BLE001 - the test reads the reason
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}))
    finally:
        connection.close()


asyncio.run(main())
