"""verify_checksum / update_checksum (and the *_with_payload variants) for generated code.

BMv2 semantics (src/bm_sim/checksums.cpp, calculations.cpp; docs/simple_switch.md):

- The calculation input is the field list packed as for `hash()` (`pack_fields`); for the
  *_with_payload variants the packet payload (the bytes after the last parsed header) is
  appended after the packed, byte-padded fields.
- verify: when the condition holds, the computed value is compared with the checksum field;
  a mismatch sets standard_metadata.checksum_error = 1. A false condition passes.
- update: when the condition holds, the checksum field gets the computed value, truncated
  to the field's width. A false condition leaves the field alone.
- Fields of invalid headers are left out of the list by the caller.

Callers evaluate the condition themselves; these helpers only compute and compare.
"""

from __future__ import annotations

from collections.abc import Sequence

from emu.p4.v1model.hashes import CrcSpec, HashAlgorithm, csum16, hash_function, pack_fields

__all__ = ["checksum_value", "update_checksum", "verify_checksum"]


def checksum_value(
    fields: Sequence[tuple[int, int]],
    *,
    width: int = 16,
    algo: str | HashAlgorithm = HashAlgorithm.csum16,
    payload: bytes = b"",
    crc_spec: CrcSpec | None = None,
) -> int:
    """The checksum of the packed fields (plus payload), truncated to `width` bits."""
    data = pack_fields(fields)
    if payload:
        data += payload
    if algo == HashAlgorithm.csum16 or algo == "csum16":
        value = csum16(data)  # the common case, without the dispatch
    else:
        value = hash_function(algo, crc_spec=crc_spec)(data)
    return value & ((1 << width) - 1)


def verify_checksum(
    fields: Sequence[tuple[int, int]],
    checksum: int,
    *,
    width: int = 16,
    algo: str | HashAlgorithm = HashAlgorithm.csum16,
    payload: bytes = b"",
    crc_spec: CrcSpec | None = None,
) -> bool:
    """True when `checksum` (the field's current value) equals the computed checksum."""
    return checksum_value(
        fields, width=width, algo=algo, payload=payload, crc_spec=crc_spec
    ) == (checksum & ((1 << width) - 1))


# update_checksum writes exactly the checksum of its fields into the checksum field.
update_checksum = checksum_value
