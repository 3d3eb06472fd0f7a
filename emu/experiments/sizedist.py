"""Flow-size distributions for background traffic: CDF files, sampled by inverse transform.

A distribution file holds one point a line, "<size in bytes> <cumulative percent>",
sizes and percents non-decreasing, the last percent 100; `#` starts a comment. A sample
draws a percent uniformly and interpolates linearly between the two points around it
(the way the HPCC traffic generator reads these files). Two ship with the package
(emu/experiments/sizes/, sources in their headers): `websearch` and `hadoop`.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass
from pathlib import Path

SIZES_DIR = Path(__file__).parent / "sizes"
BUILTIN = ("websearch", "hadoop")


class SizeDistError(ValueError):
    """A size-distribution file that cannot be used (the message says where and why)."""


@dataclass(frozen=True)
class SizeDist:
    name: str
    sizes: tuple[float, ...]  # bytes, non-decreasing
    cdf: tuple[float, ...]  # percent, non-decreasing, last 100

    def sample(self, rng: random.Random) -> float:
        u = rng.random() * 100.0
        i = bisect.bisect_left(self.cdf, u)
        i = max(1, min(i, len(self.cdf) - 1))
        lo, hi = self.cdf[i - 1], self.cdf[i]
        if hi <= lo:
            return self.sizes[i]
        return self.sizes[i - 1] + (self.sizes[i] - self.sizes[i - 1]) * (u - lo) / (hi - lo)

    def mean(self) -> float:
        """Mean size of the piecewise-linear distribution (bytes)."""
        return sum((self.cdf[i] - self.cdf[i - 1]) / 100.0
                   * (self.sizes[i] + self.sizes[i - 1]) / 2.0
                   for i in range(1, len(self.cdf)))


def parse_size_dist(text: str, name: str) -> SizeDist:
    sizes: list[float] = []
    cdf: list[float] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise SizeDistError(f"{name}:{n}: expected '<size bytes> <cumulative percent>', "
                                f"got {raw.strip()!r}")
        try:
            size, pct = float(parts[0]), float(parts[1])
        except ValueError:
            raise SizeDistError(f"{name}:{n}: not numbers: {raw.strip()!r}") from None
        if size < 0 or not 0 <= pct <= 100:
            raise SizeDistError(f"{name}:{n}: size must be >= 0 and percent in 0..100")
        if sizes and (size < sizes[-1] or pct < cdf[-1]):
            raise SizeDistError(f"{name}:{n}: sizes and percents must not decrease")
        sizes.append(size)
        cdf.append(pct)
    if len(sizes) < 2:
        raise SizeDistError(f"{name}: needs at least two points")
    if cdf[-1] != 100:
        raise SizeDistError(f"{name}: the last point must be at 100 percent, got {cdf[-1]:g}")
    return SizeDist(name, tuple(sizes), tuple(cdf))


def load_size_dist(spec: str) -> SizeDist:
    """`spec`: a built-in name (websearch, hadoop) or the path of a distribution file."""
    path = SIZES_DIR / f"{spec}.cdf" if spec in BUILTIN else Path(spec)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SizeDistError(f"size distribution {spec!r}: not a built-in "
                            f"({', '.join(BUILTIN)}) and not a readable file "
                            f"({exc.strerror})") from None
    return parse_size_dist(text, str(path) if spec not in BUILTIN else spec)
