"""PLB (Protective Load Balancing, Qureshi et al. SIGCOMM 2022) for RoCE QPs.

A round is one round trip measured in PSNs: it starts with the QP's highest sent PSN
as its mark and ends when the cumulative ACK passes that mark. A round is congested
if at least `congested_cnps` CNPs arrived during it (the RoCE sender's ECN feedback).
After `congested_rounds` consecutive congested rounds the QP re-paths: it draws a new
UDP source port (different from the current one) so the fabric's ECMP hash changes.
Optionally a retransmission timeout re-paths at once (the path may be broken).
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class PlbParams:
    enabled: bool = False
    congested_rounds: int = 3
    congested_cnps: int = 1
    repath_on_timeout: bool = True
    sport_min: int = 49152
    sport_max: int = 65535

    def validate(self) -> None:
        if self.congested_rounds < 1 or self.congested_cnps < 1:
            raise ValueError("plb.congested_rounds and plb.congested_cnps must be >= 1")
        if not 1 <= self.sport_min < self.sport_max <= 65535:
            raise ValueError("plb source port range must satisfy 1 <= min < max <= 65535")


class Plb:
    def __init__(self, params: PlbParams, seed: int) -> None:
        params.validate()
        self.p = params
        self.rng = random.Random(seed)
        self.round_mark: int | None = None
        self.cnps_in_round = 0
        self.congested_streak = 0
        self.rounds = 0
        self.repaths = 0

    def on_cnp(self) -> None:
        self.cnps_in_round += 1

    def on_ack(self, una: int, snd_max: int) -> bool:
        """Cumulative ACK moved to `una`; True if the QP must re-path now."""
        if not self.p.enabled:
            return False
        mark = self.round_mark
        if mark is None:
            self.round_mark = snd_max
            return False
        if una < mark:
            return False
        self.rounds += 1
        congested = self.cnps_in_round >= self.p.congested_cnps
        self.cnps_in_round = 0
        self.round_mark = snd_max
        self.congested_streak = self.congested_streak + 1 if congested else 0
        if self.congested_streak >= self.p.congested_rounds:
            self.congested_streak = 0
            return True
        return False

    def on_timeout(self) -> bool:
        return self.p.enabled and self.p.repath_on_timeout

    def new_port(self, current: int) -> int:
        self.repaths += 1
        while True:
            port = self.rng.randint(self.p.sport_min, self.p.sport_max)
            if port != current:
                return port
