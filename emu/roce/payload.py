"""Message contents generated on demand, so a flow of any size costs no memory.

Block i of a payload is SHAKE-128(key || i) truncated to BLOCK bytes: deterministic from
the key (the flow) and the offset, so the sender builds each packet's bytes when it
sends (or resends) it, and anyone can recompute the whole message's SHA-256 by
streaming it. The receiver hashes what arrives (QP deliver="digest"), so a delivered
message is byte-identical exactly when the two digests match.
"""

from __future__ import annotations

import hashlib

from emu.core.wire import MAX_MESSAGE_BYTES

BLOCK = 4096


class LazyPayload:
    """`size` bytes addressed like a bytes object by slices (`p[off:off + n]`).

    The SHA-256 is folded in as blocks are first made in order (a sender reads forwards),
    so `sha256()` after a send generates no block a second time."""

    __slots__ = ("key", "size", "_blk", "_blk_i", "_sha", "_sha_next")

    def __init__(self, key: bytes, size: int) -> None:
        if size < 0:
            raise ValueError(f"payload size must be >= 0, not {size}")
        if size > MAX_MESSAGE_BYTES:
            raise ValueError(f"payload too large ({size} bytes; at most {MAX_MESSAGE_BYTES})")
        self.key = bytes(key)
        self.size = size
        self._blk = b""
        self._blk_i = -1
        self._sha = hashlib.sha256()  # of blocks 0 .. _sha_next - 1
        self._sha_next = 0

    def __len__(self) -> int:
        return self.size

    def _block(self, i: int) -> bytes:
        if i != self._blk_i:  # a sender reads forwards: one cached block serves ~4 packets
            self._blk = blk = self._make(i)
            self._blk_i = i
            if i == self._sha_next:
                self._fold(i, blk)
        return self._blk

    def _make(self, i: int) -> bytes:
        return hashlib.shake_128(self.key + i.to_bytes(8, "big")).digest(BLOCK)

    def _fold(self, i: int, blk: bytes) -> None:
        """Block i (the next one the running hash lacks) into the hash."""
        end = self.size - i * BLOCK
        self._sha.update(blk if end >= BLOCK else blk[:end])
        self._sha_next = i + 1

    def read(self, off: int, n: int) -> bytes:
        """Bytes [off, off + n), clipped to the payload."""
        end = min(self.size, off + n)
        if off >= end:
            return b""
        i, o = divmod(off, BLOCK)
        if o + (end - off) <= BLOCK:  # within one block: the per-packet common case
            return self._block(i)[o:o + end - off]
        parts = []
        while off < end:
            i, o = divmod(off, BLOCK)
            take = min(BLOCK - o, end - off)
            parts.append(self._block(i)[o:o + take])
            off += take
        return b"".join(parts)

    def __getitem__(self, s: slice) -> bytes:
        if not isinstance(s, slice) or s.step not in (None, 1):
            raise TypeError("a LazyPayload is read by contiguous slices")
        start, stop, _ = s.indices(self.size)
        return self.read(start, stop - start)

    def sha256(self) -> str:
        """The whole payload's SHA-256 (hex): the running hash, completed with the blocks
        not made yet (which then need not be hashed again)."""
        for i in range(self._sha_next, -(-self.size // BLOCK)):
            self._fold(i, self._make(i))
        return self._sha.hexdigest()

    def tobytes(self) -> bytes:
        return self.read(0, self.size)
