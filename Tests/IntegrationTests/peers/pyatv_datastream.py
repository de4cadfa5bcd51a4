#!/usr/bin/env python3
"""pyatv's own AirPlay 2 remote-control tunnel (PyPI; what it opens to an Apple TV for
MediaRemote over AirPlay): transient pairing, a remote-control-only SETUP and its event
channel, RECORD, then a data stream (type 130) with keys from the pairing and a seed; it sends
MediaRemote messages on the stream and counts the receiver's replies.

usage: pyatv_datastream.py PORT
prints JSON: {"ok": true, "sent": N, "replies": N, "dataPort": P} or the error.
"""
import asyncio
import json
import sys

from pyatv.auth.hap_pairing import TRANSIENT_CREDENTIALS
from pyatv.protocols.airplay import channels
from pyatv.protocols.airplay.ap2_session import AP2Session
from pyatv.protocols.mrp import messages, protobuf
from pyatv.settings import InfoSettings


async def main() -> None:
    port = int(sys.argv[1])
    received = []
    plain_decode = channels.BaseDataStreamChannel.decode_message

    def decode(data):
        message, raw, rest = plain_decode(data)
        if message is not None:
            received.append((message.message_type[:4].decode(), message.seqno))
        return message, raw, rest

    channels.BaseDataStreamChannel.decode_message = staticmethod(decode)
    session = AP2Session("127.0.0.1", port, TRANSIENT_CREDENTIALS, InfoSettings())
    try:
        await asyncio.wait_for(session.connect(), 10)
        await asyncio.wait_for(session.setup_remote_control(), 10)
        channel = session.data_channel
        sent = []
        for message in [messages.device_information(InfoSettings(), "pyatv-test"), messages.create(protobuf.GENERIC_MESSAGE)]:
            sent.append(channel.send_seqno)
            channel.send_protobuf(message)
            channel.send_seqno += 1
        for _ in range(50):
            if len(received) >= len(sent):
                break
            await asyncio.sleep(0.1)
        replies = [seqno for kind, seqno in received if kind == "rply"]
        print(json.dumps({"ok": replies == sent, "sent": len(sent), "replies": len(replies), "dataPort": channel.port}))
    except Exception as error:  # noqa: BLE001 - the test reads the reason
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}))
    finally:
        session.stop()


asyncio.run(main())
