"""PLB (Protective Load Balancing, Qureshi et al. SIGCOMM 2022) for RoCE QPs.

The rules and defaults are those of the published implementation, Linux's tcp_plb
(net.ipv4.tcp_plb_*): a round is one round trip measured in PSNs: it starts with the
QP's highest sent PSN as its mark and ends when the cumulative ACK passes that mark. A
run of consecutive congested rounds re-paths the QP: it draws a new UDP source port
(different from the current one) so the fabric's ECMP hash changes. The paper's M
(`idle_congested_rounds`, 3) is enough when nothing is in flight at the round's end, so
the move reorders nothing; with packets in flight it takes N (`congested_rounds`, 12).
A retransmission timeout re-paths at once (the path may be broken) and suspends the
congestion re-paths for a random 1x to 2x of `suspend_after_timeout_ns`, so that they do
not lead the QP back into the black hole it just left.

A round is congested when at least `cong_thresh` of its packets carried CE (Linux:
tcp_plb_cong_thresh, 128 of 256). RoCE's one change: the sender does not see which
packets were marked, only the CNPs the receiver returns for them, at most one per
`cnp_gap_ns` (the notification point's min_time_between_cnps; the NIC sets it from its
DCQCN parameters, the peer's being the same in a run). Without that gap a CNP is a
marked packet, and the fraction is CNPs / packets ACKed in the round. With it, a CNP
stands for the marks of up to one gap, and the fraction is at least CNPs x gap / the
round's duration: each CNP covers the time until the next one could come (its gap),
also past the round's end into the next. With a 50 us gap and 10 us rounds, counting
CNPs alone would see one CNP in a round out of five, and never a run of congested
rounds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class PlbParams:
    enabled: bool = False
    congested_rounds: int = 12  # N: tcp_plb_rehash_rounds
    idle_congested_rounds: int = 3  # M: tcp_plb_idle_rehash_rounds (0: never when idle)
    cong_thresh: float = 0.5  # tcp_plb_cong_thresh 128 / 256: the CE fraction of a round
    # the peer's least time between CNPs; 0: the NIC puts its own DCQCN setting here
    # (0 there too: one CNP per marked packet)
    cnp_gap_ns: int = 0
    repath_on_timeout: bool = True
    # tcp_plb_suspend_rto_sec (60 s), modelled: the time a failed link takes to repair
    suspend_after_timeout_ns: int = 60_000_000_000
    sport_min: int = 49152
    sport_max: int = 65535

    def validate(self) -> None:
        if self.congested_rounds < 1:
            raise ValueError("plb.congested_rounds must be >= 1")
        if not 0 < self.cong_thresh <= 1:
            raise ValueError(f"plb.cong_thresh is a fraction in (0, 1], got {self.cong_thresh}")
        if min(self.idle_congested_rounds, self.suspend_after_timeout_ns, self.cnp_gap_ns) < 0:
            raise ValueError("plb.idle_congested_rounds, plb.suspend_after_timeout_ns and "
                             "plb.cnp_gap_ns must be >= 0")
        if not 1 <= self.sport_min < self.sport_max <= 65535:
            raise ValueError("plb source port range must satisfy 1 <= min < max <= 65535")


class Plb:
    def __init__(self, params: PlbParams, seed: int) -> None:
        params.validate()
        self.p = params
        self.rng = random.Random(seed)
        self.round_mark: int | None = None
        self.round_una = 0  # the cumulative ACK and the time when the round began
        self.round_start_ns = 0
        self.cnps_in_round = 0
        self.covered_ns = 0  # of the round, by its CNPs' gaps (may run past its end)
        self.cover_end_ns = 0
        self.congested_streak = 0
        self.rounds = 0
        self.repaths = 0
        self.suspended_until_ns: int | None = None  # after a timeout (clock time)

    def on_cnp(self, now_ns: int) -> None:
        if not self.p.enabled:
            return  # on_ack never asks; no coverage bookkeeping per CNP
        self.cnps_in_round += 1
        gap = self.p.cnp_gap_ns
        if gap:
            start = max(now_ns, self.cover_end_ns)
            self.cover_end_ns = now_ns + gap
            self.covered_ns += max(0, self.cover_end_ns - start)

    def on_ack(self, una: int, snd_max: int, now_ns: int) -> bool:
        """Cumulative ACK moved to `una`; True if the QP must re-path now."""
        if not self.p.enabled:
            return False
        mark = self.round_mark
        if mark is None:
            self._new_round(una, snd_max, now_ns)
            return False
        if una < mark:
            return False
        self.rounds += 1
        congested = self._congested(una - self.round_una, now_ns)
        self._new_round(una, snd_max, now_ns)
        if not congested:
            self.congested_streak = 0
            return False
        p = self.p
        self.congested_streak = min(self.congested_streak + 1, p.congested_rounds)
        idle = una >= snd_max and 0 < p.idle_congested_rounds <= self.congested_streak
        if self.congested_streak < p.congested_rounds and not idle:
            return False
        if self.suspended_until_ns is not None:
            if now_ns < self.suspended_until_ns:
                return False  # the streak stays: it re-paths at the first round after
            self.suspended_until_ns = None
        self.congested_streak = 0
        return True

    def _new_round(self, una: int, snd_max: int, now_ns: int) -> None:
        self.round_mark = snd_max
        self.round_una = una
        self.round_start_ns = now_ns
        self.cnps_in_round = 0
        self.covered_ns = max(0, self.cover_end_ns - now_ns)  # a CNP's gap runs on

    def _congested(self, acked: int, now_ns: int) -> bool:
        """At least cong_thresh of the round's `acked` packets marked, as the CNPs tell."""
        if acked <= 0:
            return False
        fraction = self.cnps_in_round / acked
        duration = now_ns - self.round_start_ns
        if self.p.cnp_gap_ns and duration > 0:
            covered = self.covered_ns - max(0, self.cover_end_ns - now_ns)
            fraction = max(fraction, covered / duration)
        return fraction >= self.p.cong_thresh

    def on_timeout(self, now_ns: int) -> bool:
        """A retransmission timeout; True if the QP must re-path now."""
        if not self.p.enabled:
            return False
        pause = self.p.suspend_after_timeout_ns
        self.suspended_until_ns = now_ns + pause + self.rng.randrange(pause) if pause else None
        self.congested_streak = 0  # the new path's congestion is another story
        return self.p.repath_on_timeout

    def new_port(self, current: int) -> int:
        self.repaths += 1
        while True:
            port = self.rng.randint(self.p.sport_min, self.p.sport_max)
            if port != current:
                return port
