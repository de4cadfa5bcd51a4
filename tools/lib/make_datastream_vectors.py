#!/usr/bin/env python3
"""Writes Protocol/vectors/datastream.json: an AirPlay 2 data stream (type 130) made by pyatv's
own code (PyPI, run from .venv-peers): its key derivation (HKDF-SHA512, salt "DataStream-Salt"
+ the seed in decimal), its HAP session (ChaCha20-Poly1305 frames) and its data-stream message
encoder, so our codec is checked against an implementation nobody here wrote.

usage: .venv-peers/bin/python tools/lib/make_datastream_vectors.py > Protocol/vectors/datastream.json
"""
import json
import plistlib

from pyatv.auth.hap_session import HAPSession
from pyatv.auth.hap_srp import hkdf_expand
from pyatv.protocols.airplay.channels import BaseDataStreamChannel, DataStreamMessage

SECRET = bytes(range(64))          # the pair-verify secret (transient: the 64-byte SRP key)
SEEDS = [1234567890123456789, 2**63 + 4242, 0]


def keys(seed):
    salt = "DataStream-Salt" + str(seed)
    return (hkdf_expand(salt, "DataStream-Output-Encryption-Key", SECRET),
            hkdf_expand(salt, "DataStream-Input-Encryption-Key", SECRET))


# A DEVICE_INFO ProtocolMessage (1: type 15; 20: DeviceInfoMessage {1: "AB12", 2: "iPhone"}).
device = bytes([0x0A, 4]) + b"AB12" + bytes([0x12, 6]) + b"iPhone"
protobuf = bytes([0x08, 0x0F, 0xA2, 0x01, len(device)]) + device
payload = plistlib.dumps({"params": {"data": bytes([len(protobuf)]) + protobuf}}, fmt=plistlib.FMT_BINARY)
request = BaseDataStreamChannel.encode_message(DataStreamMessage(b"sync" + 8 * b"\x00", b"comm", 0x1_2345_6789, 0, payload))
reply = BaseDataStreamChannel.encode_message(DataStreamMessage(b"rply" + 8 * b"\x00", 4 * b"\x00", 0x1_2345_6789, 0, b""))
# A message longer than one frame (1024 bytes): the frames cut it.
long_payload = plistlib.dumps({"params": {"data": bytes([0x08, 0x04]) * 700}}, fmt=plistlib.FMT_BINARY)
long_request = BaseDataStreamChannel.encode_message(DataStreamMessage(b"sync" + 8 * b"\x00", b"comm", 7, 0, long_payload))

vectors = []
for seed in SEEDS:
    output_key, input_key = keys(seed)
    sender, receiver = HAPSession(), HAPSession()
    sender.enable(output_key, input_key)      # the sender writes with the output key
    receiver.enable(input_key, output_key)
    vectors.append({
        "seed": str(seed), "senderToReceiverKey": output_key.hex(), "receiverToSenderKey": input_key.hex(),
        "setup": plistlib.dumps({"streams": [{"controlType": 2, "channelID": "C0FFEE00-0000-4000-8000-000000000001", "seed": seed,
                                               "clientUUID": "C0FFEE00-0000-4000-8000-000000000002", "type": 130,
                                               "wantsDedicatedSocket": True,
                                               "clientTypeUUID": "1910A70F-DBC0-4242-AF95-115DB30604E1"}]},
                                fmt=plistlib.FMT_BINARY).hex(),
        "requestFrames": sender.encrypt(request).hex() + sender.encrypt(long_request).hex(),
        "replyFrames": receiver.encrypt(reply).hex(),
    })

print(json.dumps({
    "what": "An AirPlay 2 data stream (SETUP streams type 130) as pyatv makes it. Keys: HKDF-SHA512 over the pairing's shared "
            "secret (here bytes 0..63), salt 'DataStream-Salt' + seed in decimal, info 'DataStream-Output-Encryption-Key' (what the "
            "sender writes) and 'DataStream-Input-Encryption-Key' (what the receiver writes). Frames: HAP's (2-byte LE length, "
            "ChaCha20-Poly1305, nonce 4 zero bytes + 8-byte LE counter from 0 per direction). Messages: a 32-byte header (BE size "
            "with the header, 12-byte type sync|rply + NULs, 4-byte command comm|NULs, BE u64 sequence, u32 0) and a binary plist "
            "{params: {data: varint length + MediaRemote ProtocolMessage}}. requestFrames: the DEVICE_INFO request (sequence "
            "0x123456789) then a request of 1,400 bytes of data (sequence 7); replyFrames: the reply to the first.",
    "generator": "tools/lib/make_datastream_vectors.py (pyatv " + __import__("pyatv.const").const.__version__ + ")",
    "request": request.hex(), "reply": reply.hex(), "longRequest": long_request.hex(), "protobuf": protobuf.hex(),
    "vectors": vectors}, indent=1))
