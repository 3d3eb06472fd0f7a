"""SetForwardingPipelineConfig's actions and the two pipelines they act on: the committed
one (forwarding) and the one VERIFY_AND_SAVE stages until COMMIT.

- VERIFY checks a config; VERIFY_AND_SAVE stages it (the old pipeline keeps forwarding;
  Writes and Reads address the staged one from then on, so the spec's replay of the
  writes since the save happens by construction).
- COMMIT swaps the staged pipeline in (NOT_FOUND with none, INVALID_ARGUMENT with a
  config attached; a cookie alone is allowed).
- VERIFY_AND_COMMIT starts afresh; RECONCILE_AND_COMMIT keeps the state: the same
  program keeps its control plane, a different one gets the state carried over by
  name (reconcile.py) or is refused with the old pipeline still running.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2
from p4.v1.p4runtime_pb2 import ForwardingPipelineConfig as FPC

from .dataplane import ControlPlane
from .device import Device
from .digests import DigestConfig, DigestManager
from .entities import EntityContext, apply_update, read_entity
from .errors import failed_precondition, invalid, not_found
from .pipeline import Pipeline
from .reconcile import IdMap, snapshot_entities, transfer
from .translate import P4InfoIndex

__all__ = ["PipelineConfigs"]

SFPC = p4runtime_pb2.SetForwardingPipelineConfigRequest


def _copy(cfg: FPC) -> FPC:
    stored = FPC()
    stored.CopyFrom(cfg)
    return stored


class PipelineConfigs:
    """The committed and the staged pipeline of one device. Callers serialise calls."""

    def __init__(self, device: Device, digests: DigestManager) -> None:
        self.device = device
        self.digests = digests
        self.committed: Pipeline | None = None
        self._saved: tuple[Pipeline, object] | None = None

    def addressed(self) -> Pipeline:
        """The pipeline Writes and Reads address: the staged one between VERIFY_AND_SAVE
        and COMMIT, else the committed one."""
        p = self._saved[0] if self._saved is not None else self.committed
        if p is None:
            raise failed_precondition("no forwarding pipeline config set")
        return p

    def context(self, pipe: Pipeline) -> EntityContext:
        return EntityContext(pipe, self.digests)

    def apply(self, action: int, cfg: FPC) -> None:
        if action == SFPC.VERIFY:
            self._verify(cfg)
        elif action == SFPC.VERIFY_AND_SAVE:
            index, prepared = self._verify(cfg)
            self._drop_saved()
            self._saved = (Pipeline(index, _copy(cfg), self.device.prepared_control(prepared)),
                           prepared)
        elif action == SFPC.COMMIT:
            self._commit_saved(cfg)
        elif action == SFPC.VERIFY_AND_COMMIT:
            index, prepared = self._verify(cfg)
            self._drop_saved()
            self._commit(index, cfg, prepared)
        elif action == SFPC.RECONCILE_AND_COMMIT:
            self._reconcile_and_commit(cfg)
        else:
            raise invalid(f"unsupported SetForwardingPipelineConfig action {action}")

    def load_initial(self, cfg: FPC) -> None:
        """Commit a pipeline given on the command line (no client, no arbitration)."""
        index, prepared = self._verify(cfg)
        self._commit(index, cfg, prepared)

    def _verify(self, cfg: FPC) -> tuple[P4InfoIndex, object]:
        index = P4InfoIndex.build(cfg.p4info)
        prepared = self.device.prepare(index, cfg.p4_device_config)
        return index, prepared

    def _drop_saved(self) -> None:
        """Forget a VERIFY_AND_SAVEd pipeline (a later config supersedes it)."""
        if self._saved is not None:
            self.device.discard(self._saved[1])
            self._saved = None

    def _commit(self, index: P4InfoIndex, cfg: FPC, prepared: object) -> None:
        control = self.device.commit(prepared)
        self.committed = Pipeline(index, _copy(cfg), control)
        self.digests.set_pipeline(index.digests.values())

    def _commit_saved(self, cfg: FPC) -> None:
        if self._saved is None:
            raise not_found("COMMIT without a config saved by VERIFY_AND_SAVE")
        if cfg.HasField("p4info") or cfg.p4_device_config:
            raise invalid("COMMIT takes no config: it commits the one saved by "
                          "VERIFY_AND_SAVE (a cookie alone may be given)")
        staged, prepared = self._saved
        self._saved = None
        if cfg.HasField("cookie"):
            staged.config.cookie.CopyFrom(cfg.cookie)
        # The staged control plane already holds the writes made since the save.
        self.device.commit(prepared)
        self.committed = staged
        self.digests.set_pipeline(staged.index.digests.values())

    def _reconcile_and_commit(self, cfg: FPC) -> None:
        if not cfg.HasField("p4info"):
            raise invalid("RECONCILE_AND_COMMIT needs a config")
        cur = self.committed
        self._drop_saved()
        if cur is None:
            index, prepared = self._verify(cfg)
            self._commit(index, cfg, prepared)
        elif (cur.config.p4info == cfg.p4info
              and cur.config.p4_device_config == cfg.p4_device_config):
            new_cfg = _copy(cur.config)
            new_cfg.cookie.CopyFrom(cfg.cookie)
            kept = Pipeline(cur.index, new_cfg, cur.control)
            kept.oneshots, kept.next_oneshot_id = cur.oneshots, cur.next_oneshot_id
            kept.hidden_members, kept.hidden_groups = cur.hidden_members, cur.hidden_groups
            self.committed = kept
        else:
            index, prepared = self._verify(cfg)
            self._reconcile(cur, index, cfg, prepared)

    def _reconcile(self, cur: Pipeline, index: P4InfoIndex, cfg: FPC,
                   prepared: object) -> None:
        """Commit a different program keeping the state (reconcile.py); atomic."""
        ids = IdMap(cur.index, index)
        stored = _copy(cfg)
        digest_ids = ids.digest_ids()
        keep: dict[int, DigestConfig] = {}
        for old_id, dcfg in self.digests.configs().items():
            if old_id not in digest_ids:
                name = cur.index.digests[old_id].preamble.name
                raise invalid("RECONCILE_AND_COMMIT cannot preserve the forwarding state: "
                              f"digest {name} is configured but not in the new P4Info "
                              "with the same type")
            keep[digest_ids[old_id]] = dcfg
        box: list[Pipeline] = []

        def carry(control: ControlPlane) -> None:
            # Runs on the switch loop before the swap: the old pipeline is quiet.
            new = Pipeline(index, stored, control)
            old_ctx, new_ctx = self.context(cur), self.context(new)
            state = snapshot_entities(lambda e: read_entity(old_ctx, e), cur.index,
                                      cur.control)
            transfer(ids, state, lambda u: apply_update(new_ctx, u))
            box.append(new)

        self.device.commit(prepared, before_swap=carry)
        self.committed = box[0]
        self.digests.set_pipeline(index.digests.values(), keep)
