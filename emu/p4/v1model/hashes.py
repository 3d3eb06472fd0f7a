"""Hash algorithms of v1model's `hash()` extern and checksum externs, as BMv2 computes them.

Facts (p4lang/behavioral-model src/bm_sim/calculations.cpp, targets/simple_switch/primitives.cpp):

- crc16: CRC-16/ARC (poly 0x8005, init 0, xorout 0, input and output reflected).
- crc32: poly 0x04C11DB7, init/xorout 0xFFFFFFFF, reflected: exactly zlib's crc32.
- crc16_custom / crc32_custom: table-driven CRC with configurable poly, init, xorout and
  the two reflection flags; BMv2's defaults equal crc16 / crc32 above. BMv2 applies `init`
  to the MSB-first register; when the data is reflected we run the equivalent reflected
  (LSB-first) register, whose init is the bit-reversed value.
- csum16: the RFC 1071 internet checksum, already complemented, as a big-endian 16-bit
  number; an odd trailing byte is padded with a zero byte at the end.
- xor16: XOR of the big-endian 16-bit words; an odd trailing byte is the high byte of a
  zero-padded word.
- identity: the first min(8, len) bytes as a big-endian number (not padded).
- random: not a BMv2 calculation; here a uniformly random 32-bit value.
- hash(): result = base + H(data) % max, computed on uint64 (BMv2 reads base and max as
  uint64), then truncated to the result's width. max == 0 yields base, as max == 1 would
  (behavioral-model issue #740, fixed by PR #745).

The data hashed is `pack_fields(...)`: BMv2's BufBuilder deparses the field list bit by bit,
MSB first, with no padding between fields, and zero-pads the whole to a byte boundary.
Fields of invalid headers are skipped by BMv2; callers leave them out of the list.
"""

from __future__ import annotations

import enum
import functools
import random as _random
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "CRC16_ARC",
    "CRC32_ISO_HDLC",
    "CrcSpec",
    "HashAlgorithm",
    "crc16",
    "crc16_custom",
    "crc32",
    "crc32_custom",
    "crc_custom",
    "csum16",
    "HashFn",
    "hash_function",
    "hash_result",
    "identity",
    "pack_fields",
    "random_hash",
    "v1model_hash",
    "xor16",
]

_U64 = (1 << 64) - 1


class HashAlgorithm(str, enum.Enum):
    """v1model's `enum HashAlgorithm` members (names as in v1model.p4)."""

    crc32 = "crc32"
    crc32_custom = "crc32_custom"
    crc16 = "crc16"
    crc16_custom = "crc16_custom"
    random = "random"
    identity = "identity"
    csum16 = "csum16"
    xor16 = "xor16"


def pack_fields(fields: Sequence[tuple[int, int]]) -> bytes:
    """Pack (value, width_bits) pairs MSB first, no per-field padding, zero-padded at the end.

    Values wider than their width are truncated to it (a P4 field cannot hold more).
    """
    acc = 0
    total = 0
    for value, width in fields:
        acc = (acc << width) | (value & ((1 << width) - 1))
        total += width
    pad = -total & 7
    return (acc << pad).to_bytes((total + pad) >> 3, "big")


# --- CRCs --------------------------------------------------------------------------------


def _reflect(value: int, nbits: int) -> int:
    out = 0
    for _ in range(nbits):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


_REFLECT8 = bytes(_reflect(i, 8) for i in range(256))


@dataclass(frozen=True)
class CrcSpec:
    """Parameters of a CRC in BMv2's terms (crc_config_t): the register is `width` bits."""

    width: int
    poly: int
    init: int
    xorout: int
    reflect_data: bool
    reflect_remainder: bool

    def __post_init__(self) -> None:
        if self.width < 8:
            raise ValueError("CRC width must be at least 8 bits")
        mask = (1 << self.width) - 1
        for name in ("poly", "init", "xorout"):
            if not 0 <= getattr(self, name) <= mask:
                raise ValueError(f"CRC {name} does not fit in {self.width} bits")


CRC16_ARC = CrcSpec(16, 0x8005, 0x0000, 0x0000, True, True)
CRC32_ISO_HDLC = CrcSpec(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)


@functools.lru_cache(maxsize=64)
def _msb_table(width: int, poly: int) -> tuple[int, ...]:
    """Table for the MSB-first register: remainder of each top byte followed by zeros."""
    top = 1 << (width - 1)
    mask = (1 << width) - 1
    table = []
    for byte in range(256):
        rem = byte << (width - 8)
        for _ in range(8):
            rem = ((rem << 1) ^ poly) & mask if rem & top else (rem << 1) & mask
        table.append(rem)
    return tuple(table)


@functools.lru_cache(maxsize=64)
def _lsb_table(width: int, poly: int) -> tuple[int, ...]:
    """Table for the reflected (LSB-first) register, built from the reflected polynomial."""
    rpoly = _reflect(poly, width)
    table = []
    for byte in range(256):
        rem = byte
        for _ in range(8):
            rem = (rem >> 1) ^ rpoly if rem & 1 else rem >> 1
        table.append(rem)
    return tuple(table)


def crc_custom(spec: CrcSpec, data: bytes) -> int:
    """CRC of `data` with BMv2's crc_custom semantics for `spec`."""
    width = spec.width
    if spec.reflect_data and spec.reflect_remainder:
        # The reflected register is bit-reversed relative to BMv2's MSB-first one, so
        # init is reversed going in and the result needs no reversal coming out.
        table = _lsb_table(width, spec.poly)
        reg = _reflect(spec.init, width)
        for b in data:
            reg = (reg >> 8) ^ table[(reg ^ b) & 0xFF]
        return reg ^ spec.xorout
    table = _msb_table(width, spec.poly)
    mask = (1 << width) - 1
    shift = width - 8
    reg = spec.init
    if spec.reflect_data:
        for b in data:
            reg = table[_REFLECT8[b] ^ (reg >> shift)] ^ ((reg << 8) & mask)
    else:
        for b in data:
            reg = table[b ^ (reg >> shift)] ^ ((reg << 8) & mask)
    if spec.reflect_remainder:
        reg = _reflect(reg, width)
    return reg ^ spec.xorout


_ARC_TABLE = _lsb_table(16, 0x8005)


def crc16(data: bytes) -> int:
    """CRC-16/ARC, BMv2's `crc16` (check value for b"123456789": 0xBB3D)."""
    table = _ARC_TABLE
    reg = 0
    for b in data:
        reg = (reg >> 8) ^ table[(reg ^ b) & 0xFF]
    return reg


def crc32(data: bytes) -> int:
    """BMv2's `crc32` (check value for b"123456789": 0xCBF43926); zlib does it in C."""
    return zlib.crc32(data)


def crc16_custom(data: bytes, spec: CrcSpec = CRC16_ARC) -> int:
    """BMv2's crc16_custom; the default parameters equal `crc16`."""
    return crc_custom(spec, data)


def crc32_custom(data: bytes, spec: CrcSpec = CRC32_ISO_HDLC) -> int:
    """BMv2's crc32_custom; the default parameters equal `crc32`."""
    if spec == CRC32_ISO_HDLC:
        return zlib.crc32(data)
    return crc_custom(spec, data)


# --- Checksums and the rest -----------------------------------------------------------------


def csum16(data: bytes) -> int:
    """Internet checksum (RFC 1071), complemented, as the 16-bit value written to a header."""
    if len(data) & 1:
        data = bytes(data) + b"\x00"
    total = sum(struct.unpack(f"!{len(data) >> 1}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def xor16(data: bytes) -> int:
    """XOR of big-endian 16-bit words, the odd last byte zero-padded on its right."""
    if len(data) & 1:
        data = bytes(data) + b"\x00"
    # XOR of words is the XOR of the even bytes (high) and of the odd bytes (low).
    acc = 0
    for word in struct.unpack(f"!{len(data) >> 1}H", data):
        acc ^= word
    return acc


def identity(data: bytes) -> int:
    """The first up-to-8 bytes as a big-endian integer (shorter input is not padded)."""
    return int.from_bytes(data[:8], "big")


_default_rng = _random.Random()


def random_hash(data: bytes, rng: _random.Random | None = None) -> int:
    """v1model's `random` algorithm: ignores the data, returns a uniform 32-bit value."""
    return (rng or _default_rng).getrandbits(32)


HashFn = Callable[[bytes], int]


def hash_function(
    algo: str | HashAlgorithm,
    *,
    crc_spec: CrcSpec | None = None,
    rng: _random.Random | None = None,
) -> HashFn:
    """Return H(data) for a v1model algorithm name; bind once per call site, call per packet.

    `crc_spec` configures crc16_custom / crc32_custom (BMv2 set_crcXX_parameters);
    `rng` feeds the `random` algorithm (for reproducible runs).
    """
    name = HashAlgorithm(algo).value
    if name == "crc16":
        return crc16
    if name == "crc32":
        return crc32
    if name == "csum16":
        return csum16
    if name == "xor16":
        return xor16
    if name == "identity":
        return identity
    if name == "random":
        return functools.partial(random_hash, rng=rng)
    if name == "crc16_custom":
        spec16 = crc_spec or CRC16_ARC
        if spec16.width != 16:
            raise ValueError("crc16_custom needs a 16-bit CrcSpec")
        return functools.partial(crc_custom, spec16) if spec16 != CRC16_ARC else crc16
    spec32 = crc_spec or CRC32_ISO_HDLC
    if spec32.width != 32:
        raise ValueError("crc32_custom needs a 32-bit CrcSpec")
    return functools.partial(crc_custom, spec32) if spec32 != CRC32_ISO_HDLC else crc32


def v1model_hash(
    algo: str | HashAlgorithm,
    base: int,
    fields: Sequence[tuple[int, int]],
    max: int,  # noqa: A002 - the v1model parameter name
    result_width: int,
    *,
    crc_spec: CrcSpec | None = None,
    rng: _random.Random | None = None,
) -> int:
    """v1model `hash(result, algo, base, data, max)`: the value to assign to `result`.

    Generated code should prefer `hash_function()` once plus `hash_result()` per packet.
    """
    h = hash_function(algo, crc_spec=crc_spec, rng=rng)(pack_fields(fields))
    return hash_result(h, base, max, result_width)


def hash_result(h: int, base: int, max: int, result_width: int) -> int:  # noqa: A002
    """base + h % max on uint64 (max == 0 acts as 1), truncated to result_width bits."""
    m = max & _U64
    off = h % m if m else 0
    return ((base & _U64) + off) & _U64 & ((1 << result_width) - 1)
