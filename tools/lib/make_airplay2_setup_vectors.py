#!/usr/bin/env python3
"""Test vectors for the AirPlay 2 SETUP bodies and replies (Protocol/vectors/airplay2-setup.json).

Each vector is a binary property list written by Python's plistlib (not by libplist, which our
codec uses), as hex, and what the codec makes of it. The request keys are those Apple's senders
write (an iPhone on iOS 18, OwnTone 29 and Music Assistant's sender write the same names);
the replies are those of airplayd and shairport-sync 5. Stream keys (`shk`) are fixed bytes:
fixed(label, n) = SHA-512("swift-airplay test vector: " + label)[:n].

Usage: make_airplay2_setup_vectors.py [OUT]
"""
import hashlib
import json
import plistlib
import sys


def fixed(label: str, n: int) -> bytes:
    return hashlib.sha512(("swift-airplay test vector: " + label).encode()).digest()[:n]


def peer(addresses):
    return {"Addresses": addresses, "ID": addresses[0], "DeviceType": 0}


IPHONE = {
    "deviceID": "AA:BB:CC:DD:EE:01", "macAddress": "AA:BB:CC:DD:EE:01", "sessionUUID": "5A7B2A4E-1C54-4C2B-9C0F-1D2E3F405060",
    "groupUUID": "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0", "groupContainsGroupLeader": False, "isMultiSelectAirPlay": True,
    "model": "iPhone16,2", "name": "Anna's iPhone", "osName": "iPhone OS", "osVersion": "18.1", "osBuildVersion": "22B83",
    "sourceVersion": "860.7.1", "senderSupportsRelay": True, "statsCollectionEnabled": False,
}


def request(what, body, expect):
    return {"what": what, "plist": plistlib.dumps(body, fmt=plistlib.FMT_BINARY, sort_keys=True).hex(), "expect": expect}


def session_expect(body, kind, peers, timing_port=None):
    return {
        "kind": kind, "timingProtocol": body.get("timingProtocol"), "timingPort": timing_port,
        "sessionUUID": body.get("sessionUUID"), "deviceID": body.get("deviceID"), "name": body.get("name"),
        "model": body.get("model"), "timingPeers": peers, "macAddress": body.get("macAddress"),
        "sourceVersion": body.get("sourceVersion"), "groupUUID": body.get("groupUUID"), "osName": body.get("osName"),
        "osVersion": body.get("osVersion"), "osBuildVersion": body.get("osBuildVersion"),
        "traits": {k: body[k] for k in ("isMultiSelectAirPlay", "groupContainsGroupLeader", "senderSupportsRelay",
                                        "statsCollectionEnabled") if k in body},
    }


def main():
    ptp = dict(IPHONE, timingProtocol="PTP", timingPeerInfo=peer(["192.168.1.20", "fe80::1c2b:3a4d:5e6f:7081"]),
               timingPeerList=[peer(["192.168.1.20", "fe80::1c2b:3a4d:5e6f:7081"]), peer(["192.168.1.30"])],
               mc2ucDetectionSSMGroupInfo={"groupID": "G"})
    ntp = dict(IPHONE, timingProtocol="NTP", timingPort=50123)
    remote = {"timingProtocol": "None", "isRemoteControlOnly": True, "sessionUUID": "R-1", "deviceID": "AA:BB:CC:DD:EE:01",
              "name": "Anna's iPhone", "model": "iPhone16,2"}
    realtime = {"type": 96, "ct": 2, "audioFormat": 0x40000, "spf": 352, "sr": 44100, "shk": fixed("realtime shk", 32),
                "controlPort": 50124, "latencyMin": 11025, "latencyMax": 88200, "isMedia": True, "audioMode": "default",
                "streamConnectionID": 3735928559, "supportsDynamicStreamID": True}
    buffered = {"type": 103, "ct": 4, "audioFormat": 0x400000, "spf": 1024, "sr": 44100, "shk": fixed("buffered shk", 32),
                "audioMode": "default", "streamConnectionID": 0x16000000, "supportsDynamicStreamID": False,
                "clientID": "Music Assistant"}

    def stream_expect(s):
        return {"type": s["type"], "compression": s["ct"], "audioFormat": s["audioFormat"], "samplesPerFrame": s["spf"],
                "sampleRate": s["sr"], "bitsPerSample": s.get("ss", 16), "streamKey": s["shk"].hex(),
                "controlPort": s.get("controlPort"), "latencyMin": s.get("latencyMin"), "latencyMax": s.get("latencyMax"),
                "isMedia": s.get("isMedia"), "audioMode": s.get("audioMode"), "streamConnectionID": s.get("streamConnectionID"),
                "supportsDynamicStreamID": s.get("supportsDynamicStreamID"), "clientID": s.get("clientID")}

    requests = [
        request("an iPhone's phase 1 on PTP: its peers listed twice (timingPeerInfo, timingPeerList), an unknown key passed over",
                ptp, session_expect(ptp, "session", ["192.168.1.20", "fe80::1c2b:3a4d:5e6f:7081", "192.168.1.30"])),
        request("phase 1 on NTP with the sender's timing port", ntp, session_expect(ntp, "session", [], 50123)),
        request("a remote-control-only SETUP: no timing", remote, session_expect(remote, "remoteControl", [])),
        request("phase 2: a realtime ALAC 44.1 kHz/16-bit stream", {"streams": [realtime]},
                {"kind": "streams", "streams": [stream_expect(realtime)]}),
        request("phase 2: a buffered AAC-LC 44.1 kHz stream, its SSRC the format code", {"streams": [buffered]},
                {"kind": "streams", "streams": [stream_expect(buffered)]}),
    ]
    replies = [
        {"what": "airplayd's phase 1 reply on PTP", "plist": plistlib.dumps(
            {"eventPort": 40000, "timingPort": 0, "timingPeerInfo": {"Addresses": ["192.168.1.40", "fe80::2"], "ID": "192.168.1.40"}},
            fmt=plistlib.FMT_BINARY).hex(),
         "expect": {"kind": "session", "eventPort": 40000, "timingPort": 0, "timingPeers": ["192.168.1.40", "fe80::2"]}},
        {"what": "a remote-control-only reply: the event port alone", "plist": plistlib.dumps({"eventPort": 40001}, fmt=plistlib.FMT_BINARY).hex(),
         "expect": {"kind": "session", "eventPort": 40001, "timingPort": None, "timingPeers": []}},
        {"what": "phase 2 replies: realtime (data and control ports) and buffered (its buffer size)", "plist": plistlib.dumps(
            {"streams": [{"type": 96, "dataPort": 41000, "controlPort": 41001},
                         {"type": 103, "dataPort": 41002, "controlPort": 41003, "audioBufferSize": 8388608}]},
            fmt=plistlib.FMT_BINARY).hex(),
         "expect": {"kind": "streams", "streams": [{"type": 96, "dataPort": 41000, "controlPort": 41001, "audioBufferSize": None},
                                                   {"type": 103, "dataPort": 41002, "controlPort": 41003, "audioBufferSize": 8388608}]}},
        {"what": "a reply without eventPort or streams is refused, naming the keys it had", "plist": plistlib.dumps(
            {"timingPort": 7010}, fmt=plistlib.FMT_BINARY).hex(), "expect": None, "error": "no eventPort (keys: timingPort)"},
    ]
    document = {
        "what": "AirPlay 2 SETUP bodies and replies as binary property lists (hex, written by Python's plistlib), and what "
                "AirPlay2Setup(plist:ptp:) and AirPlay2SetupReply(plist:) make of them. Each must also survive our encoder: "
                "decode, encode, decode gives the same value. expect null: refused, error is part of the message.",
        "generator": "tools/lib/make_airplay2_setup_vectors.py",
        "requests": requests,
        "replies": replies,
    }
    out = sys.argv[1] if len(sys.argv) > 1 else "Protocol/vectors/airplay2-setup.json"
    with open(out, "w") as f:
        json.dump(document, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
