#!/usr/bin/env python3
"""pyatv's own AirPlay 2 remote-control tunnel (PyPI; what it opens to an Apple TV for
MediaRemote over AirPlay): transient pairing, a remote-control-only SETUP and its event
channel, RECORD, then a data stream (type 130) with keys from the pairing and a seed; it sends
MediaRemote messages on the stream and counts the receiver's replies.

usage: pyatv_datastream.py PORT [COMMAND]
COMMAND (play, pause, …: pyatv's CommandInfo names in lower case) is sent as a SEND_COMMAND
after the other messages, and the SEND_COMMAND_RESULT awaited.
prints JSON: {"ok": true, "sent": N, "replies": N, "dataPort": P, "result": {…} or null} or the error.
"""
import asyncio
import json
import sys

from pyatv.auth.hap_pairing import TRANSIENT_CREDENTIALS
from pyatv.protocols.airplay import channels
from pyatv.protocols.airplay.channels import DataStreamListener
from pyatv.protocols.airplay.ap2_session import AP2Session
from pyatv.protocols.mrp import messages, protobuf
from pyatv.settings import InfoSettings


async def main() -> None:
    port = int(sys.argv[1])
    command = sys.argv[2] if len(sys.argv) > 2 else None
    received = []
    results = []

    class Listener(DataStreamListener):
        def handle_protobuf(self, message):
            if message.type == protobuf.SEND_COMMAND_RESULT_MESSAGE:
                inner = protobuf.extract_inner(message)
                results.append({"identifier": message.identifier, "sendError": inner.sendError,
                                "handlerReturnStatus": inner.handlerReturnStatus})

        def handle_connection_lost(self, exc):
            pass

    listener = Listener()
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
        channel.listener = listener
        sent = []
        outgoing = [messages.device_information(InfoSettings(), "pyatv-test"), messages.create(protobuf.GENERIC_MESSAGE)]
        if command:
            names = {name.lower(): value for name, value in protobuf.CommandInfo_pb2.Command.items()}
            message = messages.command(names[command])
            message.identifier = "command-1"
            outgoing.append(message)
        for message in outgoing:
            sent.append(channel.send_seqno)
            channel.send_protobuf(message)
            channel.send_seqno += 1
        for _ in range(100):
            if len([1 for kind, _ in received if kind == "rply"]) >= len(sent) and (not command or results):
                break
            await asyncio.sleep(0.1)
        replies = [seqno for kind, seqno in received if kind == "rply"]
        print(json.dumps({"ok": replies == sent and (not command or bool(results)), "sent": len(sent), "replies": len(replies),
                          "dataPort": channel.port, "result": results[0] if results else None}))
    except Exception as error:  # noqa: BLE001 - the test reads the reason
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}))
    finally:
        session.stop()


asyncio.run(main())
