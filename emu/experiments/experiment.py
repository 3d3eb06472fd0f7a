"""An experiment file (docs/experiments.md): a base run, a grid over run options, seeds.

Read with source positions (emu.topo.yamlpos), checked in full before anything runs:
every problem is reported at once as `file:line:column: message` (a TopologyError,
which the CLI prints as `emu topo check` does). The result is the list of points, each
a RunConfig ready for plan_run.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import itertools
import math
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from emu.topo import Fabric, load_topology
from emu.topo.errors import Collector, Mark, TopologyError
from emu.topo.yamlpos import YList, YMap, parse_yaml

from .config import RunConfig, RunConfigError
from .workloads import WorkloadError, WorkloadParams

_T = typing.TypeVar("_T")
TOP_KEYS = ("name", "description", "base", "grid", "seeds", "timeout")
DEFAULT_TIMEOUT_S = 600.0
# More runs than this in one file is a typo (a seed count with extra digits), not a plan:
# refused before any point is built.
MAX_POINTS = 10_000
# RunConfig fields an experiment does not set: the sweep owns them (where results go,
# virtual or real, the live view) or they make no sense for an unattended point.
NOT_OPTIONS = frozenset({"workload", "results_root", "virtual", "progress", "cli",
                         "rate_reason", "lock_wait_s", "seed"})
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class OptionError(ValueError):
    """A value an option cannot take (the message says what it takes)."""


@dataclass(frozen=True)
class Option:
    name: str
    part: str  # "run" (a RunConfig field) or "workload" (a WorkloadParams field)
    field: str
    parse: Callable[[object], object]
    takes: str  # what it takes, for messages


@dataclass(frozen=True)
class Point:
    """One run of the experiment: `varied` are the options the grid set (and the seed),
    in the file's order; `config` the whole run."""

    id: str
    varied: tuple[tuple[str, object], ...]
    config: RunConfig

    @property
    def seed(self) -> int:
        return self.config.workload.seed

    @property
    def dir_name(self) -> str:
        """The point's folder name: its id, made safe for a path (ids are unique)."""
        return "".join(c if c.isalnum() or c in "=,.-_" else "_" for c in self.id)

    def options(self) -> dict[str, str]:
        """The varied options (a set axis's own options) and the seed, as text."""
        out: dict[str, str] = {}
        for k, v in self.varied:
            if isinstance(v, Mapping):
                out.update({kk: _show(vv) for kk, vv in v.items()})
            else:
                out[k] = _show(v)
        return out

    @property
    def configuration(self) -> str:
        """The point's id without its seed: points differing only in seed share it."""
        return _point_id([(k, v) for k, v in self.varied if k != "seed"]) or "base"


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    file: Path
    base: dict[str, object]
    axes: tuple[str, ...]
    seeds: tuple[int, ...]
    timeout_s: float
    points: tuple[Point, ...] = field(default=())


# --------------------------------------------------------------------------- options


def _parse_size(v: object) -> int:
    from emu.topo import UnitError, parse_message_size

    try:
        return parse_message_size(v)
    except UnitError as exc:
        raise OptionError(str(exc)) from None


def _parse_rate(v: object) -> int:
    from emu.topo import UnitError, parse_rate

    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return int(v)
    try:
        return int(parse_rate(str(v)))
    except (UnitError, ValueError) as exc:
        raise OptionError(str(exc)) from None


def _parse_link(v: object) -> tuple[str, str]:
    if isinstance(v, str):
        a, sep, b = v.partition(":")
        if sep and a and b:
            return a, b
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v):
        return v[0], v[1]
    raise OptionError(f"expected SWITCH:SWITCH, got {v!r}")


# A scalar option's type -> (the YAML values it takes, what to call them in errors)
_SCALARS: dict[type, tuple[tuple[type, ...], str]] = {
    bool: ((bool,), "true or false"),
    int: ((int,), "an integer"),
    float: ((int, float), "a number"),
    str: ((str,), "a string"),
}


def _parser_for(hint: object) -> tuple[Callable[[object], object], str]:
    """A parser of YAML values for a dataclass field's type, and what it takes."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        inner, takes = _parser_for(next(a for a in args if a is not type(None)))
        return (lambda v: None if v is None else inner(v)), f"{takes} or null"
    if origin is typing.Literal:
        choices = [str(a) for a in args]

        def literal(v: object) -> object:
            if v not in args:
                raise OptionError(f"expected one of {', '.join(choices)}, got {v!r}")
            return v
        return literal, "one of " + ", ".join(choices)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [str(m.value) for m in hint]

        def member(v: object) -> object:
            try:
                return hint(v)
            except ValueError:
                raise OptionError(f"expected one of {', '.join(values)}, got {v!r}") from None
        return member, "one of " + ", ".join(values)
    if isinstance(hint, type) and hint in _SCALARS:
        accepted, takes = _SCALARS[hint]

        def scalar(v: object) -> object:
            # YAML's true/false are ints to isinstance; only a bool option takes them
            if not isinstance(v, accepted) or (isinstance(v, bool) and hint is not bool):
                raise OptionError(f"expected {takes}, got {v!r}")
            return float(v) if hint is float else v  # type: ignore[arg-type]
        return scalar, takes
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item, takes = _parser_for(args[0])

        def seq(v: object) -> tuple[object, ...]:
            if not isinstance(v, list):
                raise OptionError(f"expected a list of {takes}, got {v!r}")
            return tuple(item(x) for x in v)
        return seq, f"a list of {takes}"
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        cls = hint

        def record(v: object) -> object:  # an option that is a settings object (a mapping)
            if not isinstance(v, Mapping):
                raise OptionError(f"expected a mapping of {cls.__name__} fields, got {v!r}")
            try:
                return cls(**dict(v))
            except TypeError as exc:
                raise OptionError(str(exc)) from None
        return record, f"a mapping of {cls.__name__} fields"
    return (lambda v: v), str(hint)


def options() -> dict[str, Option]:
    """Every option an experiment may set, by name (aliases included)."""
    out: dict[str, Option] = {}
    for part, cls in (("run", RunConfig), ("workload", WorkloadParams)):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.name in NOT_OPTIONS:
                continue
            parse, takes = _parser_for(hints[f.name])
            out[f.name] = Option(f.name, part, f.name, parse, takes)
    special = {
        "topology": ("run", "topo", out["topo"].parse, "a topology name or file"),
        "workload": ("workload", "kind", out["kind"].parse, out["kind"].takes),
        "size": ("workload", "message_bytes", _parse_size, "a size in bytes (4096, 64K, 1M)"),
        "rate": ("run", "rate_bps", _parse_rate, "a rate (e.g. 20Mbps)"),
        "window": ("run", "window_pkts", out["window_pkts"].parse, out["window_pkts"].takes),
        "fail_link": ("run", "fail_link", _parse_link, "SWITCH:SWITCH"),
        "fail_after": ("run", "fail_after_s", out["fail_after_s"].parse, "seconds"),
    }
    for name, (part, fld, parse, takes) in special.items():
        out[name] = Option(name, part, fld, parse, takes)
    out.pop("kind")
    return out


def _point_id(varied: Sequence[tuple[str, object]]) -> str:
    """`lb=spray,cc=none,seed=2`: a set axis shows its options, not its name; its empty
    mapping (the base as it is) shows as `AXIS=base`."""
    return ",".join((_show(x) or f"{k}=base") if isinstance(x, Mapping) else f"{k}={_show(x)}"
                    for k, x in varied)


def _show(v: object) -> str:
    if v is None:  # as the file spells it (lb_seed: null), not Python's None
        return "null"
    if isinstance(v, enum.Enum):
        return str(v.value)
    if isinstance(v, tuple):
        return ":".join(str(x) for x in v)
    if isinstance(v, Mapping):
        return ",".join(f"{k}={_show(x)}" for k, x in v.items())
    return str(v)


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Suspect:
    """An option whose value, with every other option at its default, breaks a rule. The
    rule may involve another option that the file also sets (`workload: background` wants
    a `background_load`), so only a point that fails with the same message convicts it."""

    name: str
    value: object
    mark: Mark
    message: str


@dataclass
class _Reader:
    file: Path
    errs: Collector = field(default_factory=Collector)
    opts: dict[str, Option] = field(default_factory=options)
    suspects: list[_Suspect] = field(default_factory=list)
    real: bool = False  # the points run in real time (emu experiment --real)

    def error(self, mark: Mark, message: str) -> None:
        self.errs.error(mark, message)

    def unknown(self, mark: Mark, key: str, known: Sequence[str], what: str) -> None:
        near = difflib.get_close_matches(key, known, n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        self.error(mark, f"unknown {what} '{key}'{hint}")

    def option(self, name: str, value: object, key_mark: Mark, value_mark: Mark
               ) -> tuple[str, object] | None:
        """The parsed value of one option; None (reported) if it does not parse. A value
        that breaks a rule with every other option at its default becomes a suspect."""
        opt = self.opts.get(name)
        if opt is None:
            self.unknown(key_mark, name, sorted(self.opts), "option")
            return None
        if opt.field == "topo" and isinstance(value, str):
            local = self.file.parent / value
            value = str(local) if ("/" in value or value.endswith((".yaml", ".yml"))) \
                and local.is_file() else value
        try:
            parsed = opt.parse(value)
        except OptionError as exc:
            self.error(value_mark, f"{name}: {exc}")
            return None
        try:
            _build({name: parsed}, self.opts, virtual=not self.real).validate()
        except (RunConfigError, WorkloadError) as exc:
            msg = str(exc).removeprefix("run configuration: ")
            self.suspects.append(_Suspect(name, parsed, value_mark, msg))
        return name, parsed

    def sets(self, point: Point, suspect: _Suspect) -> bool:
        opt = self.opts[suspect.name]
        holder = point.config if opt.part == "run" else point.config.workload
        got, value = getattr(holder, opt.field), suspect.value
        both_nan = isinstance(got, float) and isinstance(value, float) and \
            math.isnan(got) and math.isnan(value)
        return both_nan or bool(got == value)

    def mapping(self, m: object, mark: Mark, what: str) -> dict[str, object]:
        if not isinstance(m, YMap):
            self.error(mark, f"{what} must be a mapping of options")
            return {}
        out: dict[str, object] = {}
        for k, v in m.items():
            got = self.option(k, v, m.key_mark(k), m.value_mark(k))
            if got is not None:
                out[got[0]] = got[1]
        return out


def _build(values: Mapping[str, object], opts: Mapping[str, Option], seed: int | None = None,
           **run: object) -> RunConfig:
    """A RunConfig from parsed option values (each checked by its field's parser)."""
    run_kw: dict[str, object] = dict(run)
    wl_kw: dict[str, object] = {}
    for name, v in values.items():
        opt = opts[name]
        (run_kw if opt.part == "run" else wl_kw)[opt.field] = v
    if seed is not None:
        wl_kw["seed"] = seed
    run_kw["workload"] = _with_fields(WorkloadParams(), wl_kw)
    return _with_fields(RunConfig(), run_kw)


def _with_fields(obj: _T, changes: Mapping[str, object]) -> _T:
    """`obj` with `changes`: each value came from its field's parser (_parser_for), so it
    has the field's type; the dataclass's own validate() checks the rest."""
    replace: Callable[..., _T] = dataclasses.replace
    return replace(obj, **changes)


def load_experiment(path: str | Path, *, results_root: Path = Path("results"),
                    real: bool = False) -> Experiment:
    """The experiment in `path`, every point checked (plan_run); raises TopologyError
    with every problem found, at its position."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError.at(Mark(str(file)), f"cannot read: {exc}") from None
    return loads_experiment(text, file, results_root=results_root, real=real)


def loads_experiment(text: str, file: Path, *, results_root: Path = Path("results"),
                     real: bool = False) -> Experiment:
    r = _Reader(file, real=real)
    doc = parse_yaml(text, str(file), r.errs)
    top = Mark(str(file), 1, 1)
    if not isinstance(doc, YMap):
        r.error(getattr(doc, "mark", top), "an experiment file is a mapping with base, grid "
                "and seeds (docs/experiments.md)")
        r.errs.raise_if_any()
        raise AssertionError("unreachable")
    for k in doc:
        if k not in TOP_KEYS:
            r.unknown(doc.key_mark(k), k, TOP_KEYS, "key")
    name = doc.get("name", file.stem)
    if not isinstance(name, str) or not NAME_RE.match(name):
        r.error(doc.value_mark("name"), f"name must be letters, digits, '.', '_' or '-', "
                f"got {name!r}")
    description = doc.get("description", "")
    if not isinstance(description, str):
        r.error(doc.value_mark("description"), "description must be a string")
    base = r.mapping(doc.get("base", YMap(top)), doc.value_mark("base"), "base")
    axes = _axes(r, doc)
    seeds = _seeds(r, doc)
    timeout = doc.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
            not math.isfinite(timeout) or timeout <= 0:
        r.error(doc.value_mark("timeout"), f"timeout must be a positive number of seconds, "
                f"got {timeout!r}")
        timeout = DEFAULT_TIMEOUT_S
    runs = len(seeds) * math.prod(len(values) for _, values in axes)
    if runs > MAX_POINTS:
        r.error(doc.key_mark("grid") if "grid" in doc else top, f"the grid and seeds make {runs} "
                f"runs; at most {MAX_POINTS} in one experiment file")
        r.errs.raise_if_any()
    exp = Experiment(str(name), str(description), file, base, tuple(a for a, _ in axes),
                     seeds, float(timeout))
    # Planned even when the file has other errors, so that every bad value is reported
    # together; the points then lack those values, so only the suspects are judged.
    points = _points(exp, axes, r.opts, results_root, real)
    _check_points(r, doc, points, whole=not r.errs)
    r.errs.raise_if_any()
    return dataclasses.replace(exp, points=tuple(points))


def _axes(r: _Reader, doc: YMap) -> list[tuple[str, list[tuple[object, dict[str, object]]]]]:
    """Each axis: its name and its values, each with the options it sets."""
    grid = doc.get("grid", YMap(Mark(str(r.file))))
    if not isinstance(grid, YMap):
        r.error(doc.value_mark("grid"), "grid must be a mapping: option (or axis name) -> "
                "list of values")
        return []
    axes = []
    for axis, values in grid.items():
        km, vm = grid.key_mark(axis), grid.value_mark(axis)
        if not isinstance(values, YList) or not values:
            r.error(vm, f"grid axis '{axis}' needs a non-empty list of values")
            continue
        out: list[tuple[object, dict[str, object]]] = []
        if axis in r.opts:
            for i, v in enumerate(values):
                got = r.option(axis, v, km, values.item_mark(i))
                if got is not None:
                    out.append((got[1], {axis: got[1]}))
        elif all(isinstance(v, YMap) for v in values):
            for i, v in enumerate(values):
                opts = r.mapping(v, values.item_mark(i), f"grid axis '{axis}' value")
                out.append((opts, opts))
        else:
            near = difflib.get_close_matches(axis, sorted(r.opts), n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            r.error(km, f"unknown option '{axis}'{hint}; an axis that is not an option "
                    "takes mappings of options as its values")
            continue
        shown = [_show(v) for v, _ in out]
        dups = sorted({s for s in shown if shown.count(s) > 1})
        if dups:
            r.error(vm, f"grid axis '{axis}' repeats {', '.join(dups)}")
        axes.append((axis, out))
    return axes


def _seeds(r: _Reader, doc: YMap) -> tuple[int, ...]:
    seeds = doc.get("seeds", [1])
    mark = doc.value_mark("seeds")
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if not 1 <= seeds <= MAX_POINTS:
            r.error(mark, f"seeds: a count must be 1..{MAX_POINTS}, got {seeds}")
            return (1,)
        return tuple(range(1, seeds + 1))
    if isinstance(seeds, list) and seeds and all(
            isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        if len(set(seeds)) != len(seeds):
            r.error(mark, "seeds repeat a value")
        return tuple(seeds)
    r.error(mark, f"seeds must be a count or a non-empty list of integers, got {seeds!r}")
    return (1,)


def _points(exp: Experiment, axes: Sequence[tuple[str, list[tuple[object, dict[str, object]]]]],
            opts: Mapping[str, Option], results_root: Path, real: bool) -> list[Point]:
    out = []
    for combo in itertools.product(*[vals for _, vals in axes]):
        values = dict(exp.base)
        varied: list[tuple[str, object]] = []
        for (axis, _), (shown, sets) in zip(axes, combo, strict=True):
            values.update(sets)
            varied.append((axis, shown))
        for seed in exp.seeds:
            v = (*varied, ("seed", seed))
            pid = _point_id(v)
            cfg = _build(values, opts, seed, virtual=not real, progress=False,
                         results_root=results_root)
            out.append(Point(pid, v, _real_time_rate(cfg) if real else cfg))
    return out


def _real_time_rate(cfg: RunConfig) -> RunConfig:
    """A real-time point that gives neither `rate` nor `dilation` runs at the rate `emu
    run` would give it (this machine's calibrated rate for its topology, else the
    built-in one), not the library's default wire rate, which a small machine's CPU
    cannot keep up with."""
    if cfg.rate_bps is not None or cfg.dilation is not None:
        return cfg
    from .rates import choose_rate

    choice = choose_rate(cfg.topo, cfg.target, None)
    return dataclasses.replace(cfg, rate_bps=choice.rate_bps, rate_reason=choice.reason)


def _check_points(r: _Reader, doc: YMap, points: Sequence[Point], whole: bool) -> None:
    """Plan every point (as `emu run --dry-run` would): errors that only a whole point
    shows (a rate and a dilation, more incast senders than hosts) are reported at the
    grid (or base) with the points they concern; a suspect value whose rule a point
    breaks, where the file gives it. `whole`: the points have every value of the file
    (no other error dropped one), so a failure no suspect explains is reported too."""
    from .plan import plan_run

    where = doc.key_mark("grid") if "grid" in doc else doc.key_mark("base")
    models: dict[str, Fabric | None] = {}
    failing: dict[str, list[Point]] = {}
    for p in points:
        topo = p.config.topo
        if topo not in models:
            try:
                models[topo] = load_topology(topo)
            except TopologyError as exc:
                models[topo] = None
                for d in exc.diagnostics:
                    m = d.mark
                    if m.line <= 0 and m.file == topo:  # no such topology: at the option
                        m = _value_mark(doc, ("topology", "topo"), topo)
                    r.error(m, d.message if m.file != topo else f"topology: {d.message}")
        model = models[topo]
        if model is None:
            continue
        fail = p.config.fail_link
        if fail is not None and not model.link_between(*fail):
            r.error(_value_mark(doc, ("fail_link",), ":".join(fail)),
                    f"fail_link: topology {model.name} has no link between {fail[0]} and "
                    f"{fail[1]}")
            continue
        try:
            plan_run(p.config, model)
        except (RunConfigError, WorkloadError) as exc:
            msg = str(exc).removeprefix("run configuration: ")
            failing.setdefault(msg, []).append(p)
    for msg, failed in failing.items():
        # A value that breaks the rule by itself is named where the file gives it.
        culprits = [s for s in r.suspects
                    if s.message == msg and any(r.sets(p, s) for p in failed)]
        for s in culprits:
            r.error(s.mark, f"{s.name}: {msg}")
        if not culprits and whole:
            ids = [p.id for p in failed]
            shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
            r.error(where, f"point{'s' if len(ids) > 1 else ''} {shown}: {msg}")


def _value_mark(doc: YMap, keys: Sequence[str], value: str) -> Mark:
    """Where the file gives option `keys` the text `value` (base, a grid axis, a set
    axis's mapping); the file's start if nowhere."""
    def find(m: object) -> Mark | None:
        if isinstance(m, YList):
            for i, x in enumerate(m):
                if isinstance(x, str) and value.endswith(x):
                    return m.item_mark(i)
                if (found := find(x)) is not None:
                    return found
        if isinstance(m, YMap):
            for k, v in m.items():
                if k in keys and isinstance(v, str) and value.endswith(v):
                    return m.value_mark(k)
                if k in keys and isinstance(v, YList):
                    if (found := find(v)) is not None:
                        return found
                elif isinstance(v, (YMap, YList)) and (found := find(v)) is not None:
                    return found
        return None

    return find(doc) or doc.mark
