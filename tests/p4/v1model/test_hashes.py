"""Hash algorithms against published check values and slow bitwise references."""

from __future__ import annotations

import random
import time

from hypothesis import given
from hypothesis import strategies as st

from emu.p4.v1model.checksum import checksum_value, update_checksum, verify_checksum
from emu.p4.v1model.hashes import (
    CRC16_ARC,
    CRC32_ISO_HDLC,
    CrcSpec,
    HashAlgorithm,
    crc16,
    crc16_custom,
    crc32,
    crc32_custom,
    crc_custom,
    csum16,
    hash_function,
    hash_result,
    identity,
    pack_fields,
    v1model_hash,
    xor16,
)

CHECK = b"123456789"


# --- slow references, written from the definitions ----------------------------------------


def ref_reflect(v: int, n: int) -> int:
    return int(format(v, f"0{n}b")[::-1], 2)


def ref_crc(spec: CrcSpec, data: bytes) -> int:
    """Bit-at-a-time MSB-first CRC (the Rocksoft model BMv2 follows)."""
    w = spec.width
    reg = spec.init
    for b in data:
        if spec.reflect_data:
            b = ref_reflect(b, 8)
        for i in range(7, -1, -1):
            bit = (b >> i) & 1
            top = (reg >> (w - 1)) & 1
            reg = (reg << 1) & ((1 << w) - 1)
            if top ^ bit:
                reg ^= spec.poly
    if spec.reflect_remainder:
        reg = ref_reflect(reg, w)
    return reg ^ spec.xorout


def ref_csum16(data: bytes) -> int:
    """RFC 1071 straight from the text: ones'-complement sum of 16-bit words, complemented."""
    if len(data) % 2:
        data += b"\0"
    s = 0
    for i in range(0, len(data), 2):
        s += (data[i] << 8) | data[i + 1]
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ref_pack(fields: list[tuple[int, int]]) -> bytes:
    bits = "".join(format(v & ((1 << w) - 1), f"0{w}b") if w else "" for v, w in fields)
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))


# --- check values (the CRC catalogue's "check" = CRC of b"123456789") ----------------------


def test_crc16_arc_check_value() -> None:
    assert crc16(CHECK) == 0xBB3D
    assert crc16_custom(CHECK) == 0xBB3D
    assert crc16(b"") == 0


def test_crc32_check_value() -> None:
    assert crc32(CHECK) == 0xCBF43926
    assert crc32_custom(CHECK) == 0xCBF43926
    assert crc_custom(CRC32_ISO_HDLC, CHECK) == 0xCBF43926  # the table path, not zlib


def test_custom_crcs_check_values() -> None:
    cases = [
        (CrcSpec(16, 0x1021, 0xFFFF, 0, False, False), 0x29B1),  # CRC-16/CCITT-FALSE
        (CrcSpec(16, 0x1021, 0, 0, False, False), 0x31C3),  # CRC-16/XMODEM
        (CrcSpec(16, 0x8005, 0xFFFF, 0, True, True), 0x4B37),  # CRC-16/MODBUS
        (CrcSpec(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, False, False), 0xFC891918),  # BZIP2
        (CrcSpec(32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True, True), 0xE3069283),  # CRC-32C
        (CrcSpec(12, 0x80F, 0, 0, False, True), 0xDAF),  # CRC-12/UMTS: mixed reflection
    ]
    for spec, check in cases:
        assert crc_custom(spec, CHECK) == check, spec
        assert ref_crc(spec, CHECK) == check, spec


def test_csum16_rfc1071_examples() -> None:
    # RFC 1071 section 3 example: the words sum to 0xDDF2, so the checksum is 0x220D.
    assert csum16(bytes.fromhex("0001f203f4f5f6f7")) == 0x220D
    # IPv4 header with its checksum field zeroed; the correct checksum is 0xB861.
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert csum16(hdr) == 0xB861
    # A header carrying its correct checksum sums to 0xFFFF, so csum16 gives 0.
    assert csum16(hdr[:10] + b"\xb8\x61" + hdr[12:]) == 0
    # p4c testdata/p4_16_samples/checksum1-bmv2.stf: simple_switch's output IPv4 header
    # 45000028 00010000 3f06 65bb 0a00020f 0a010005 carries checksum 0x65BB.
    out = bytes.fromhex("45000028000100003f0665bb0a00020f0a010005")
    assert csum16(out[:10] + b"\0\0" + out[12:]) == 0x65BB
    assert csum16(b"") == 0xFFFF
    assert csum16(b"\x01") == 0xFEFF  # odd byte padded on the right


def test_xor16_and_identity() -> None:
    assert xor16(bytes.fromhex("12345678")) == 0x1234 ^ 0x5678
    assert xor16(bytes.fromhex("1234ab")) == 0x1234 ^ 0xAB00
    assert identity(bytes.fromhex("abcd")) == 0xABCD
    assert identity(bytes(range(1, 11))) == 0x0102030405060708


# --- packing and hash() --------------------------------------------------------------------


def test_pack_fields_msb_first_no_padding_between_fields() -> None:
    # 4-bit 0xA, 4-bit 0x5, 16-bit 0x1234 -> A5 12 34
    assert pack_fields([(0xA, 4), (0x5, 4), (0x1234, 16)]) == bytes.fromhex("a51234")
    # 9-bit port 0x1FF then 3 bits 0b101: 1111 1111 1101 -> FF D0 (zero-padded)
    assert pack_fields([(0x1FF, 9), (0b101, 3)]) == bytes.fromhex("ffd0")
    assert pack_fields([(0x3FF, 8)]) == b"\xff"  # too-wide values are truncated
    assert pack_fields([]) == b""


@given(st.lists(st.tuples(st.integers(0, 2**70), st.integers(1, 70)), max_size=8))
def test_pack_fields_matches_reference(fields: list[tuple[int, int]]) -> None:
    assert pack_fields(fields) == ref_pack(fields)


@given(st.binary(max_size=64))
def test_crcs_match_bitwise_reference(data: bytes) -> None:
    assert crc16(data) == ref_crc(CRC16_ARC, data)
    assert crc32(data) == ref_crc(CRC32_ISO_HDLC, data)
    assert crc_custom(CRC32_ISO_HDLC, data) == crc32(data)


@given(
    st.binary(max_size=40),
    st.sampled_from([8, 16, 32]),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.booleans(),
    st.booleans(),
)
def test_custom_crc_matches_reference(
    data: bytes, width: int, poly: int, init: int, xorout: int, rin: bool, rout: bool
) -> None:
    m = (1 << width) - 1
    spec = CrcSpec(width, poly & m, init & m, xorout & m, rin, rout)
    assert crc_custom(spec, data) == ref_crc(spec, data)


@given(st.binary(max_size=80))
def test_csum16_matches_reference(data: bytes) -> None:
    assert csum16(data) == ref_csum16(data)


def test_v1model_hash_modulo_base_and_truncation() -> None:
    fields = [(0x0A000001, 32), (0x0A000002, 32), (6, 8)]
    h = crc16(pack_fields(fields))
    assert v1model_hash("crc16", 0, fields, 8, 16) == h % 8
    assert v1model_hash(HashAlgorithm.crc16, 100, fields, 8, 16) == 100 + h % 8
    # Truncated to the result width: base 0xFF + anything in 4 bits.
    assert v1model_hash("crc16", 0xFF, fields, 8, 4) == (0xFF + h % 8) & 0xF
    # max == 0 gives base, as max == 1 would (BMv2 PR #745).
    assert v1model_hash("crc32", 7, fields, 0, 16) == 7
    assert v1model_hash("crc32", 7, fields, 1, 16) == 7
    # A max larger than the hash leaves it whole.
    assert v1model_hash("crc32", 0, fields, 2**32, 32) == crc32(pack_fields(fields))
    assert hash_result(10, 1, 3, 8) == 2


def test_hash_function_dispatch_and_custom_spec() -> None:
    data = CHECK
    assert hash_function("crc16")(data) == 0xBB3D
    assert hash_function("crc16_custom")(data) == 0xBB3D
    xmodem = CrcSpec(16, 0x1021, 0, 0, False, False)
    assert hash_function("crc16_custom", crc_spec=xmodem)(data) == 0x31C3
    assert hash_function("csum16")(data) == csum16(data)
    rng = random.Random(1)
    r = hash_function("random", rng=rng)
    assert 0 <= r(data) < 2**32


def test_checksum_helpers() -> None:
    # IPv4 header as fields with the checksum left out (as a P4 program lists them).
    f = [(4, 4), (5, 4), (0, 8), (0x73, 16), (0, 16), (0b010, 3), (0, 13), (0x40, 8), (0x11, 8),
         (0xC0A80001, 32), (0xC0A800C7, 32)]
    assert update_checksum(f) == 0xB861
    assert verify_checksum(f, 0xB861)
    assert not verify_checksum(f, 0xB862)
    # With payload: UDP-style pseudo-header fields followed by the payload bytes.
    assert checksum_value([(0x0001, 16)], payload=bytes.fromhex("f203f4f5f6f7")) == 0x220D
    assert checksum_value([(0x0001, 16)], algo="crc16", payload=b"") == crc16(b"\x00\x01")


def test_crc16_speed() -> None:
    """A crc16 over a 13-byte 5-tuple should cost a few microseconds at most."""
    data = bytes(range(13))
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        crc16(data)
    per_call_us = (time.perf_counter() - t0) / n * 1e6
    assert per_call_us < 10, per_call_us  # ~1-2 us expected; generous for loaded CI
