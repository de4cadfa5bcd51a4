#!/usr/bin/env python3
"""Deterministic test vectors for HAP-style AirPlay pairing.

Covers: SRP-6a (RFC 5054 3072-bit group, g=5, SHA-512, user "Pair-Setup") for
PIN 1234 (normal pair-setup M1..M6) and PIN 3939 (transient pair-setup M1..M4),
the HKDF-SHA-512 derivations, the ChaCha20-Poly1305 sealed sub-TLVs (PS-Msg05,
PS-Msg06, PV-Msg02, PV-Msg03), pair-verify (X25519 + Ed25519), control/event
channel keys and encrypted control-channel frames.

Every secret is fixed: fixed(label, n) = SHA-512("swift-airplay test vector: " + label)[:n].

Computation:
  * SRP: plain Python integers + hashlib (this file), then cross-checked against
    srptools' SRPClientSession/SRPServerSession (1.x or 2.x) fed the same a, b, salt, verifier.
  * Ed25519, X25519, HKDF-SHA-512, ChaCha20-Poly1305: `cryptography`.
  * Optional cross-check against pyatv's own client (SRPAuthHandler) and fake receiver
    (BaseAirPlayServerAuth) and HAPSession framing, when pyatv is importable and works
    with the installed srptools (pyatv 0.18.0 needs srptools < 2: it passes `private`
    positionally, which srptools 2.0.0 rejects).

Usage:  python3 pairing_vectors.py [out.json]   (default: pairing_vectors.json next to this file)
"""

import binascii
import hashlib
import json
import os
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey,
    X25519PublicKey,
)
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

# RFC 5054 appendix A, 3072-bit group.
N_HEX = (
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA6"
    "3B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245"
    "E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7EDEE386BFB5A899FA5AE9F2411"
    "7C4B1FE649286651ECE45B3DC2007CB8A163BF0598DA48361C55D39A69163FA8FD24CF5F"
    "83655D23DCA3AD961C62F356208552BB9ED529077096966D670C354E4ABC9804F1746C08"
    "CA18217C32905E462E36CE3BE39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9"
    "DE2BCBF6955817183995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D"
    "04507A33A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7"
    "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864D8760273"
    "3EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E208E24FA074E5AB31"
    "43DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF"
)
N = int(N_HEX, 16)
G = 5
N_LEN = 384
USER = b"Pair-Setup"

# TLV8 types
T_METHOD, T_ID, T_SALT, T_PK, T_PROOF, T_ENC, T_STATE, T_ERROR = 0, 1, 2, 3, 4, 5, 6, 7
T_RETRY, T_CERT, T_SIG, T_PERM, T_FRAG, T_FRAGLAST, T_NAME, T_FLAGS, T_SEP = (
    8, 9, 10, 11, 12, 13, 0x11, 0x13, 0xFF)


def H(*parts: bytes) -> bytes:
    h = hashlib.sha512()
    for p in parts:
        h.update(p)
    return h.digest()


def i2b(n: int) -> bytes:
    """Minimal big-endian encoding (what BN_bn2bin produces)."""
    return n.to_bytes(max(1, (n.bit_length() + 7) // 8), "big")


def pad(n: int) -> bytes:
    """RFC 5054 PAD(): left-pad to len(N) = 384 bytes (BN_bn2binpad(n, buf, 384))."""
    return n.to_bytes(N_LEN, "big")


def b2i(b: bytes) -> int:
    return int.from_bytes(b, "big")


def fixed(label: str, n: int) -> bytes:
    return hashlib.sha512(("swift-airplay test vector: " + label).encode()).digest()[:n]


def hkdf(ikm: bytes, salt: str, info: str, length: int = 32) -> bytes:
    return HKDF(algorithm=hashes.SHA512(), length=length, salt=salt.encode(),
                info=info.encode()).derive(ikm)


def label_nonce(label: str) -> bytes:
    """"PS-Msg05" etc: 4 zero bytes followed by the 8 ASCII bytes (12-byte IETF nonce)."""
    raw = label.encode()
    assert len(raw) == 8
    return b"\x00" * 4 + raw


def counter_nonce(counter: int) -> bytes:
    """Channel frames: 4 zero bytes + 64-bit little-endian counter."""
    return b"\x00" * 4 + counter.to_bytes(8, "little")


def seal(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes = None) -> bytes:
    return ChaCha20Poly1305(key).encrypt(nonce, plaintext, aad)  # ciphertext || 16-byte tag


def open_(key: bytes, nonce: bytes, sealed: bytes, aad: bytes = None) -> bytes:
    return ChaCha20Poly1305(key).decrypt(nonce, sealed, aad)


def tlv_encode(items) -> bytes:
    """items: list of (type, bytes). Values > 255 bytes are split into 255-byte chunks."""
    out = bytearray()
    for t, v in items:
        if len(v) == 0:
            out += bytes([t, 0])
            continue
        for i in range(0, len(v), 255):
            chunk = v[i:i + 255]
            out += bytes([t, len(chunk)]) + chunk
    return bytes(out)


def tlv_decode(data: bytes) -> dict:
    """Flat decode; consecutive same-type items are concatenated (no separator handling)."""
    res, pos, last = {}, 0, None
    while pos < len(data):
        t, ln = data[pos], data[pos + 1]
        v = data[pos + 2:pos + 2 + ln]
        if t == last and t in res:
            res[t] += v
        else:
            res[t] = v
        last = t
        pos += 2 + ln
    return res


def ed_pub(seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def ed_sign(seed: bytes, msg: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).sign(msg)


def x_pub(priv: bytes) -> bytes:
    return X25519PrivateKey.from_private_bytes(priv).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def x_shared(priv: bytes, peer_pub: bytes) -> bytes:
    return X25519PrivateKey.from_private_bytes(priv).exchange(
        X25519PublicKey.from_public_bytes(peer_pub))


def hx(b: bytes) -> str:
    return b.hex()


# --------------------------------------------------------------------------- SRP

K_MULT = b2i(H(pad(N), pad(G)))                          # k = H(N | PAD(g))
HN_XOR_HG = bytes(a ^ b for a, b in zip(H(i2b(N)), H(i2b(G))))  # H(N) xor H(g), g as 1 byte


def srp_reference(pin: str, salt: bytes, a_bytes: bytes, b_bytes: bytes) -> dict:
    a, b = b2i(a_bytes), b2i(b_bytes)
    x = b2i(H(salt, H(USER + b":" + pin.encode())))          # x = H(s | H(I ":" P))
    v = pow(G, x, N)
    A = pow(G, a, N)
    B = (K_MULT * v + pow(G, b, N)) % N
    u = b2i(H(pad(A), pad(B)))                                  # u = H(PAD(A) | PAD(B))
    S_client = pow((B - K_MULT * pow(G, x, N)) % N, a + u * x, N)
    S_server = pow(A * pow(v, u, N) % N, b, N)
    assert S_client == S_server
    S = S_client
    K = H(i2b(S))                                               # K = H(S), S minimal bytes
    M1 = H(HN_XOR_HG, H(USER), salt, i2b(A), i2b(B), K)         # client proof
    M2 = H(i2b(A), M1, K)                                       # server proof
    return dict(pin=pin, salt=salt, a=a_bytes, b=b_bytes, x=i2b(x), v=i2b(v), A=i2b(A),
                B=i2b(B), u=i2b(u), S=i2b(S), K=K, M1=M1, M2=M2,
                A_len=len(i2b(A)), B_len=len(i2b(B)), S_len=len(i2b(S)))


def srptools_check(r: dict) -> dict:
    """Run srptools client+server with the same fixed a, b, salt and verifier."""
    import srptools
    from srptools import SRPClientSession, SRPContext, SRPServerSession, constants

    def _h(val):
        return val.decode() if isinstance(val, bytes) else val

    assert int(constants.PRIME_3072, 16) == N and int(constants.PRIME_3072_GEN, 16) == G
    cctx = SRPContext("Pair-Setup", r["pin"], prime=constants.PRIME_3072,
                      generator=constants.PRIME_3072_GEN, hash_func=hashlib.sha512)
    sctx = SRPContext("Pair-Setup", prime=constants.PRIME_3072,
                      generator=constants.PRIME_3072_GEN, hash_func=hashlib.sha512)
    client = SRPClientSession(cctx, private=hx(r["a"]))
    server = SRPServerSession(sctx, password_verifier=hx(r["v"]), private=hx(r["b"]))
    salt_hex = hx(r["salt"])
    client.process(_h(server.public), salt_hex)
    server.process(_h(client.public), salt_hex)
    got = {
        "A": _h(client.public), "B": _h(server.public),
        "K_client": _h(client.key), "K_server": _h(server.key),
        "M1": _h(client.key_proof), "M2": _h(server.key_proof_hash),
    }
    want = {"A": hx(r["A"]), "B": hx(r["B"]), "K_client": hx(r["K"]), "K_server": hx(r["K"]),
            "M1": hx(r["M1"]), "M2": hx(r["M2"])}
    mism = [k for k in want if got[k].lower() != want[k]]
    ok_proofs = (server.verify_proof(client.key_proof) and
                 client.verify_proof(server.key_proof_hash))
    ver = getattr(srptools, "VERSION", None) or getattr(srptools, "__version__", None)
    if ver is None:
        try:
            from importlib.metadata import version
            ver = version("srptools")
        except Exception:  # noqa
            ver = "?"
    return {"srptools_version": str(ver), "match": not mism, "mismatches": mism,
            "verify_proof_both_sides": bool(ok_proofs)}


# --------------------------------------------------------------------------- build

def build() -> dict:
    out = {"meta": {}, "constants": {}, "checks": {}}
    import cryptography
    out["meta"] = {
        "generator": "pairing_vectors.py",
        "python": sys.version.split()[0],
        "cryptography": cryptography.__version__,
        "fixed_secret_rule": 'fixed(label, n) = SHA-512("swift-airplay test vector: " + label)[:n]',
        "byte_encoding": "all byte strings are lowercase hex",
        "srp_encoding_rules": (
            "k=H(PAD(N)|PAD(g)); u=H(PAD(A)|PAD(B)); x=H(salt|H('Pair-Setup:'|PIN)); "
            "K=H(S) with S minimal big-endian; M1=H((H(N) xor H(g))|H('Pair-Setup')|salt|A|B|K) "
            "with N,g,A,B minimal big-endian (g = single byte 0x05); M2=H(A|M1|K); PAD = 384 bytes"),
    }
    out["constants"] = {
        "N": N_HEX.lower(), "g": G, "N_len": N_LEN,
        "k": hx(i2b(K_MULT)), "H_N_xor_H_g": hx(HN_XOR_HG), "H_I": hx(H(USER)),
    }

    # ---- fixed secrets
    salt = fixed("srp salt", 16)
    a = fixed("srp a (client private)", 32)
    b = fixed("srp b (server private)", 32)
    salt_t = fixed("srp salt transient", 16)
    a_t = fixed("srp a transient", 32)
    b_t = fixed("srp b transient", 32)
    ctrl_seed = fixed("controller ed25519 seed", 32)
    acc_seed = fixed("accessory ed25519 seed", 32)
    ctrl_id = b"7E1D6BE2-4D43-4F0A-9C73-0B3E1BB1A1C5"   # 36 ASCII bytes, uuid4-style like pyatv
    acc_id = b"5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5"    # receiver pairing id (e.g. its psi)
    cx_priv = fixed("controller x25519 private", 32)
    ax_priv = fixed("accessory x25519 private", 32)
    out["inputs"] = {
        "pin_normal": "1234", "pin_transient": "3939",
        "srp_salt": hx(salt), "srp_a": hx(a), "srp_b": hx(b),
        "srp_salt_transient": hx(salt_t), "srp_a_transient": hx(a_t), "srp_b_transient": hx(b_t),
        "controller_ed25519_seed": hx(ctrl_seed), "controller_ed25519_public": hx(ed_pub(ctrl_seed)),
        "controller_pairing_id_ascii": ctrl_id.decode(),
        "accessory_ed25519_seed": hx(acc_seed), "accessory_ed25519_public": hx(ed_pub(acc_seed)),
        "accessory_pairing_id_ascii": acc_id.decode(),
        "controller_x25519_private": hx(cx_priv), "controller_x25519_public": hx(x_pub(cx_priv)),
        "accessory_x25519_private": hx(ax_priv), "accessory_x25519_public": hx(x_pub(ax_priv)),
    }

    # ---- SRP
    srp_n = srp_reference("1234", salt, a, b)
    srp_t = srp_reference("3939", salt_t, a_t, b_t)
    for r in (srp_n, srp_t):
        # keep the main vectors free of the rare length edge cases
        assert r["A_len"] == 384 and r["B_len"] == 384 and r["S_len"] == 384, r
    conv = lambda r: {k: (hx(v) if isinstance(v, bytes) else v) for k, v in r.items()}
    out["srp_pin_1234"] = conv(srp_n)
    out["srp_pin_3939_transient"] = conv(srp_t)
    try:
        out["checks"]["srptools_pin_1234"] = srptools_check(srp_n)
        out["checks"]["srptools_pin_3939"] = srptools_check(srp_t)
    except ImportError as ex:
        out["checks"]["srptools"] = f"skipped: {ex}"

    # ---- Pair-setup messages (PIN 1234)
    K = srp_n["K"]
    m1 = tlv_encode([(T_METHOD, b"\x00"), (T_STATE, b"\x01")])            # pyatv order
    m2 = tlv_encode([(T_STATE, b"\x02"), (T_SALT, salt), (T_PK, srp_n["B"])])
    m3 = tlv_encode([(T_STATE, b"\x03"), (T_PK, srp_n["A"]), (T_PROOF, srp_n["M1"])])
    m4 = tlv_encode([(T_STATE, b"\x04"), (T_PROOF, srp_n["M2"])])
    m4_err = tlv_encode([(T_STATE, b"\x04"), (T_ERROR, b"\x02")])
    ps_key = hkdf(K, "Pair-Setup-Encrypt-Salt", "Pair-Setup-Encrypt-Info")
    ctrl_x = hkdf(K, "Pair-Setup-Controller-Sign-Salt", "Pair-Setup-Controller-Sign-Info")
    acc_x = hkdf(K, "Pair-Setup-Accessory-Sign-Salt", "Pair-Setup-Accessory-Sign-Info")
    ctrl_ltpk = ed_pub(ctrl_seed)
    ctrl_info = ctrl_x + ctrl_id + ctrl_ltpk
    ctrl_sig = ed_sign(ctrl_seed, ctrl_info)
    name_opack = bytes.fromhex("e1446e616d65457079617476")  # OPACK {"name": "pyatv"}
    m5_sub = tlv_encode([(T_ID, ctrl_id), (T_PK, ctrl_ltpk), (T_SIG, ctrl_sig), (T_NAME, name_opack)])
    m5_enc = seal(ps_key, label_nonce("PS-Msg05"), m5_sub)
    m5 = tlv_encode([(T_STATE, b"\x05"), (T_ENC, m5_enc)])
    acc_ltpk = ed_pub(acc_seed)
    acc_info = acc_x + acc_id + acc_ltpk
    acc_sig = ed_sign(acc_seed, acc_info)
    m6_sub = tlv_encode([(T_ID, acc_id), (T_PK, acc_ltpk), (T_SIG, acc_sig)])
    m6_enc = seal(ps_key, label_nonce("PS-Msg06"), m6_sub)
    m6 = tlv_encode([(T_STATE, b"\x06"), (T_ENC, m6_enc)])
    assert open_(ps_key, label_nonce("PS-Msg05"), m5_enc) == m5_sub
    out["pair_setup_pin_1234"] = {
        "http_headers_pyatv": {"User-Agent": "AirPlay/320.20", "Connection": "keep-alive",
                                "X-Apple-HKP": "3", "Content-Type": "application/octet-stream"},
        "M1_tlv": hx(m1), "M2_tlv": hx(m2), "M3_tlv": hx(m3), "M4_tlv": hx(m4),
        "M4_wrong_pin_tlv": hx(m4_err),
        "session_key_Pair-Setup-Encrypt": hx(ps_key),
        "iOSDeviceX_Pair-Setup-Controller-Sign": hx(ctrl_x),
        "AccessoryX_Pair-Setup-Accessory-Sign": hx(acc_x),
        "nonce_PS-Msg05": hx(label_nonce("PS-Msg05")), "nonce_PS-Msg06": hx(label_nonce("PS-Msg06")),
        "M5_signed_info": hx(ctrl_info), "M5_signature": hx(ctrl_sig),
        "M5_name_opack": hx(name_opack),
        "M5_subtlv": hx(m5_sub), "M5_encrypted_data": hx(m5_enc), "M5_tlv": hx(m5),
        "M6_signed_info": hx(acc_info), "M6_signature": hx(acc_sig),
        "M6_subtlv": hx(m6_sub), "M6_encrypted_data": hx(m6_enc), "M6_tlv": hx(m6),
    }
    creds = ":".join([hx(acc_ltpk), hx(ctrl_seed), hx(acc_id), hx(ctrl_id)])
    out["pyatv_credentials_string"] = {
        "format": "hex(receiver LTPK):hex(controller Ed25519 seed):hex(receiver pairing id bytes):hex(controller pairing id bytes)",
        "value": creds,
    }

    # ---- Transient (PIN 3939)
    Kt = srp_t["K"]
    t_m1 = tlv_encode([(T_METHOD, b"\x00"), (T_STATE, b"\x01"), (T_FLAGS, b"\x10")])
    t_m2 = tlv_encode([(T_STATE, b"\x02"), (T_SALT, salt_t), (T_PK, srp_t["B"])])
    t_m3 = tlv_encode([(T_STATE, b"\x03"), (T_PK, srp_t["A"]), (T_PROOF, srp_t["M1"])])
    t_m4 = tlv_encode([(T_STATE, b"\x04"), (T_PROOF, srp_t["M2"])])
    t_write = hkdf(Kt, "Control-Salt", "Control-Write-Encryption-Key")
    t_read = hkdf(Kt, "Control-Salt", "Control-Read-Encryption-Key")
    out["transient_pin_3939"] = {
        "http_headers_pyatv": {"User-Agent": "AirPlay/320.20", "Connection": "keep-alive",
                                "X-Apple-HKP": "4", "Content-Type": "application/octet-stream"},
        "M1_tlv": hx(t_m1), "M2_tlv": hx(t_m2), "M3_tlv": hx(t_m3), "M4_tlv": hx(t_m4),
        "shared_secret_is_K_64_bytes": hx(Kt),
        "Control-Write-Encryption-Key (sender->receiver)": hx(t_write),
        "Control-Read-Encryption-Key (receiver->sender)": hx(t_read),
    }

    # ---- Pair-verify
    c_pub, a_pub = x_pub(cx_priv), x_pub(ax_priv)
    shared = x_shared(ax_priv, c_pub)
    assert shared == x_shared(cx_priv, a_pub)
    pv_key = hkdf(shared, "Pair-Verify-Encrypt-Salt", "Pair-Verify-Encrypt-Info")
    pv_m1 = tlv_encode([(T_STATE, b"\x01"), (T_PK, c_pub)])
    acc_pv_info = a_pub + acc_id + c_pub
    acc_pv_sig = ed_sign(acc_seed, acc_pv_info)
    pv_m2_sub = tlv_encode([(T_ID, acc_id), (T_SIG, acc_pv_sig)])
    pv_m2_enc = seal(pv_key, label_nonce("PV-Msg02"), pv_m2_sub)
    pv_m2 = tlv_encode([(T_STATE, b"\x02"), (T_PK, a_pub), (T_ENC, pv_m2_enc)])
    ctrl_pv_info = c_pub + ctrl_id + a_pub
    ctrl_pv_sig = ed_sign(ctrl_seed, ctrl_pv_info)
    pv_m3_sub = tlv_encode([(T_ID, ctrl_id), (T_SIG, ctrl_pv_sig)])
    pv_m3_enc = seal(pv_key, label_nonce("PV-Msg03"), pv_m3_sub)
    pv_m3 = tlv_encode([(T_STATE, b"\x03"), (T_ENC, pv_m3_enc)])
    pv_m4 = tlv_encode([(T_STATE, b"\x04")])
    pv_m4_err = tlv_encode([(T_STATE, b"\x04"), (T_ERROR, b"\x02")])
    Ed25519PublicKey.from_public_bytes(ctrl_ltpk).verify(ctrl_pv_sig, ctrl_pv_info)
    c_write = hkdf(shared, "Control-Salt", "Control-Write-Encryption-Key")
    c_read = hkdf(shared, "Control-Salt", "Control-Read-Encryption-Key")
    e_write = hkdf(shared, "Events-Salt", "Events-Write-Encryption-Key")
    e_read = hkdf(shared, "Events-Salt", "Events-Read-Encryption-Key")
    out["pair_verify"] = {
        "http_headers_pyatv": {"User-Agent": "AirPlay/320.20", "Connection": "keep-alive",
                                "X-Apple-HKP": "3", "Content-Type": "application/octet-stream"},
        "shared_secret_x25519": hx(shared),
        "session_key_Pair-Verify-Encrypt": hx(pv_key),
        "nonce_PV-Msg02": hx(label_nonce("PV-Msg02")), "nonce_PV-Msg03": hx(label_nonce("PV-Msg03")),
        "M1_tlv": hx(pv_m1),
        "M2_signed_info (accEphPub|accId|ctrlEphPub)": hx(acc_pv_info),
        "M2_signature": hx(acc_pv_sig), "M2_subtlv": hx(pv_m2_sub),
        "M2_encrypted_data": hx(pv_m2_enc), "M2_tlv": hx(pv_m2),
        "M3_signed_info (ctrlEphPub|ctrlId|accEphPub)": hx(ctrl_pv_info),
        "M3_signature": hx(ctrl_pv_sig), "M3_subtlv": hx(pv_m3_sub),
        "M3_encrypted_data": hx(pv_m3_enc), "M3_tlv": hx(pv_m3),
        "M4_tlv": hx(pv_m4), "M4_auth_error_tlv": hx(pv_m4_err),
        "Control-Write-Encryption-Key (sender->receiver)": hx(c_write),
        "Control-Read-Encryption-Key (receiver->sender)": hx(c_read),
        "Events-Write-Encryption-Key (receiver->sender on event channel)": hx(e_write),
        "Events-Read-Encryption-Key (sender->receiver on event channel)": hx(e_read),
    }

    # ---- Encrypted control-channel frames (keys from pair-verify above)
    req = b"GET /info RTSP/1.0\r\nCSeq: 3\r\n\r\n"
    resp = b"RTSP/1.0 200 OK\r\nCSeq: 3\r\nContent-Length: 0\r\n\r\n"

    def frame(key, counter, pt):
        aad = len(pt).to_bytes(2, "little")
        return aad + seal(key, counter_nonce(counter), pt, aad)

    f_req0 = frame(c_write, 0, req)
    f_req1 = frame(c_write, 1, req)
    f_resp0 = frame(c_read, 0, resp)
    big = bytes(range(256)) * 5  # 1280 bytes -> two frames (1024 + 256)
    f_big = frame(c_read, 1, big[:1024]) + frame(c_read, 2, big[1024:])
    out["control_frames"] = {
        "layout": "LE16 plaintext length (also the AAD) || ChaCha20-Poly1305 ciphertext || 16-byte tag; nonce = 00000000 || LE64 counter; counter per direction, starts at 0, +1 per frame",
        "sender_to_receiver_key": "Control-Write-Encryption-Key", "receiver_to_sender_key": "Control-Read-Encryption-Key",
        "request_plaintext_ascii": req.decode(), "request_frame_counter0": hx(f_req0),
        "request_frame_counter1_same_plaintext": hx(f_req1),
        "response_plaintext_ascii": resp.decode(), "response_frame_counter0": hx(f_resp0),
        "big_plaintext": "bytes(range(256))*5 (1280 bytes)",
        "big_response_counter1_and_2_two_frames": hx(f_big),
        "nonce_counter0": hx(counter_nonce(0)), "nonce_counter1": hx(counter_nonce(1)),
    }

    # ---- pair-add / pair-list / pair-remove bodies (sent inside the encrypted channel)
    other_id = b"C0FFEE00-1111-2222-3333-444455556666"
    other_pk = ed_pub(fixed("second controller ed25519 seed", 32))
    out["admin_tlvs"] = {
        "pair_add_M1": hx(tlv_encode([(T_STATE, b"\x01"), (T_METHOD, b"\x03"), (T_ID, other_id),
                                      (T_PK, other_pk), (T_PERM, b"\x01")])),
        "pair_add_M2_ok": hx(tlv_encode([(T_STATE, b"\x02")])),
        "pair_remove_M1": hx(tlv_encode([(T_STATE, b"\x01"), (T_METHOD, b"\x04"), (T_ID, other_id)])),
        "pair_list_M1": hx(tlv_encode([(T_STATE, b"\x01"), (T_METHOD, b"\x05")])),
        "pair_list_M2_two_entries": hx(tlv_encode([
            (T_STATE, b"\x02"), (T_ID, ctrl_id), (T_PK, ctrl_ltpk), (T_PERM, b"\x01"),
            (T_SEP, b""), (T_ID, other_id), (T_PK, other_pk), (T_PERM, b"\x00")])),
    }

    # ---- TLV fragmentation example
    v300 = bytes(range(256)) + bytes(range(44))
    out["tlv_examples"] = {
        "state_M1": hx(tlv_encode([(T_STATE, b"\x01")])),
        "value_300_bytes_type_03": hx(tlv_encode([(T_PK, v300)])),
        "value_510_bytes_type_03_prefix": hx(tlv_encode([(T_PK, bytes(510))])[:4]) + "... (2 items of 255, no empty trailer)",
        "separator": hx(tlv_encode([(T_SEP, b"")])),
    }

    out["checks"].update(pyatv_checks(srp_n, srp_t, locals()))
    return out


# --------------------------------------------------------------------------- pyatv cross-check

def pyatv_checks(srp_n, srp_t, v) -> dict:
    res = {}
    try:
        import pyatv  # noqa
        from pyatv.auth import hap_tlv8
        from pyatv.auth.hap_pairing import HapCredentials
        from pyatv.auth.hap_session import HAPSession
        from pyatv.auth.hap_srp import SRPAuthHandler, hkdf_expand
        from pyatv.auth.hap_tlv8 import TlvValue, read_tlv, write_tlv
        from pyatv.protocols.airplay.server_auth import BaseAirPlayServerAuth, ServerKeys
        from pyatv.const import __version__ as pyatv_version
    except Exception as ex:  # noqa
        return {"pyatv": f"skipped: {ex!r}"}
    res["pyatv_version"] = pyatv_version

    # TLV writer identical to pyatv's for the same item order
    res["tlv_write_matches_pyatv"] = (
        write_tlv({TlvValue.Method: b"\x00", TlvValue.SeqNo: b"\x01"}) == bytes.fromhex(v["out"]["pair_setup_pin_1234"]["M1_tlv"])
        and write_tlv({TlvValue.PublicKey: v["v300"]}) == bytes.fromhex(v["out"]["tlv_examples"]["value_300_bytes_type_03"]))

    res["hkdf_matches_pyatv"] = hkdf_expand("Control-Salt", "Control-Write-Encryption-Key", v["shared"]) == v["c_write"]

    # --- client side (pyatv SRPAuthHandler)
    try:
        h = SRPAuthHandler()
        h.initialize()
        h._auth_private = srp_n["a"]          # pyatv uses its Ed25519 seed as SRP private a
        h.step1("1234")
        pub, proof = h.step2(srp_n["B"], v["salt"])
        res["pyatv_client_A_M1_match"] = (pub == srp_n["A"] and proof == srp_n["M1"])
        res["pyatv_client_K_match"] = binascii.unhexlify(h.shared_key) == srp_n["K"]
        # switch to the fixed controller identity for M5
        h._auth_private = v["ctrl_seed"]
        h._signing_key = Ed25519PrivateKey.from_private_bytes(v["ctrl_seed"])
        h._auth_public = v["ctrl_ltpk"]
        h.pairing_id = v["ctrl_id"]
        enc5 = h.step3(name="pyatv")
        res["pyatv_client_M5_encrypted_match"] = enc5 == v["m5_enc"]
        creds = h.step4(v["m6_enc"])
        res["pyatv_client_M6_decrypt_and_credentials_match"] = str(creds) == v["creds"]
    except TypeError as ex:
        res["pyatv_client"] = f"failed (srptools API mismatch?): {ex}"

    # --- receiver side (pyatv's fake receiver logic)
    class Srv(BaseAirPlayServerAuth):
        def enable_encryption(self, output_key, input_key):
            self.enabled = (output_key, input_key)

    acc_sign = Ed25519PrivateKey.from_private_bytes(v["acc_seed"])
    axk = X25519PrivateKey.from_private_bytes(v["ax_priv"])
    keys = ServerKeys(sign=acc_sign, auth=v["acc_seed"], auth_pub=v["acc_ltpk"],
                      verify=axk, verify_pub=axk.public_key())
    srv = Srv("vectors", unique_id=v["acc_id"].decode(), pin=1234)
    srv.keys = keys

    class FakeSession:
        key = hx(srp_n["K"])

    srv.session = FakeSession()
    m6 = srv._m5_setup(read_tlv(bytes.fromhex(v["out"]["pair_setup_pin_1234"]["M5_tlv"])), transient=False)
    res["pyatv_receiver_M6_match"] = read_tlv(m6)[TlvValue.EncryptedData] == v["m6_enc"]

    pv2 = srv._m1_verify(read_tlv(bytes.fromhex(v["out"]["pair_verify"]["M1_tlv"])))
    res["pyatv_receiver_PV_M2_match"] = pv2 == bytes.fromhex(v["out"]["pair_verify"]["M2_tlv"])
    res["pyatv_receiver_control_keys_match"] = (srv.input_key == v["c_write"] and srv.output_key == v["c_read"])

    try:
        hv = SRPAuthHandler()
        hv.initialize()
        hv._verify_private = X25519PrivateKey.from_private_bytes(v["cx_priv"])
        hv._public_bytes = v["c_pub"]
        cred = HapCredentials(v["acc_ltpk"], v["ctrl_seed"], v["acc_id"], v["ctrl_id"])
        enc3 = hv.verify1(cred, v["a_pub"], v["pv_m2_enc"])
        res["pyatv_client_PV_M3_match"] = enc3 == v["pv_m3_enc"]
        ok, ik = hv.verify2("Control-Salt", "Control-Write-Encryption-Key", "Control-Read-Encryption-Key")
        res["pyatv_client_control_keys_match"] = (ok == v["c_write"] and ik == v["c_read"])
    except Exception as ex:  # noqa
        res["pyatv_client_verify"] = f"failed: {ex!r}"

    # transient: pyatv receiver's M3 handling with a real srptools server session
    try:
        from srptools import SRPContext, SRPServerSession, constants
        ctx = SRPContext("Pair-Setup", prime=constants.PRIME_3072, generator=constants.PRIME_3072_GEN,
                         hash_func=hashlib.sha512, bits_salt=128, bits_random=512)
        try:
            sess = SRPServerSession(ctx, password_verifier=hx(srp_t["v"]), private=hx(srp_t["b"]))
        except TypeError:
            sess = SRPServerSession(ctx, hx(srp_t["v"]), hx(srp_t["b"]))
        srv.session = sess
        srv.salt = hx(srp_t["salt"])
        m4 = srv._m3_setup(read_tlv(bytes.fromhex(v["out"]["transient_pin_3939"]["M3_tlv"])), transient=True)
        d = read_tlv(m4)
        res["pyatv_receiver_transient_M4_proof_match"] = d.get(TlvValue.Proof) == srp_t["M2"]
        res["pyatv_receiver_transient_control_keys_match"] = (
            srv.input_key == v["t_write"] and srv.output_key == v["t_read"])
    except Exception as ex:  # noqa
        res["pyatv_receiver_transient"] = f"failed: {ex!r}"

    # framing: pyatv HAPSession (client side: output=Control-Write, input=Control-Read)
    s = HAPSession()
    s.enable(v["c_write"], v["c_read"])
    res["pyatv_hapsession_request_frame_match"] = s.encrypt(v["req"]) == v["f_req0"]
    res["pyatv_hapsession_response_decrypt_match"] = s.decrypt(v["f_resp0"]) == v["resp"]
    r = HAPSession()
    r.enable(v["c_read"], v["c_write"])  # receiver view
    r.decrypt(v["f_req0"])
    res["pyatv_hapsession_big_response_match"] = r.encrypt(v["resp"]) == v["f_resp0"] and \
        r.encrypt(v["big"]) == v["f_big"]
    return res


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "pairing_vectors.json")
    data = build()
    with open(path, "w") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    print(json.dumps(data["checks"], indent=2))
    bad = [k for k, val in _flatten(data["checks"]) if val is False]
    if bad:
        print("CHECK FAILURES:", bad)
        sys.exit(1)


def _flatten(d, prefix=""):
    for k, val in d.items():
        if isinstance(val, dict):
            yield from _flatten(val, prefix + k + ".")
        else:
            yield prefix + k, val


if __name__ == "__main__":
    main()
