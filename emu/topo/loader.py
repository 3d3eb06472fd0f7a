"""Finding and loading topology files.

A topology is named either by a path or by a name looked up (with or without
`.yaml`/`.yml`) in the directories of `$EMU_TOPOLOGIES` (os.pathsep-separated, searched
first) and then the repository's `topologies/` directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import Collector, Mark, TopologyError
from .limits import program_limits
from .model import Fabric
from .schema import read_spec
from .validate import build_fabric, check_spec
from .yamlpos import parse_yaml

REPO_TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def search_dirs() -> list[Path]:
    dirs = [Path(p) for p in os.environ.get("EMU_TOPOLOGIES", "").split(os.pathsep) if p]
    return [*dirs, REPO_TOPOLOGIES]


def available_topologies() -> list[str]:
    """Names loadable by `load_topology` (first directory wins on clashes)."""
    names: dict[str, None] = {}
    for d in search_dirs():
        if d.is_dir():
            for f in sorted([*d.glob("*.yaml"), *d.glob("*.yml")]):
                names.setdefault(f.stem, None)
    return list(names)


def resolve_topology(name_or_path: str | os.PathLike[str]) -> Path:
    """Path of the topology file; raises TopologyError if there is none."""
    given = Path(name_or_path)
    if given.is_file():
        return given
    text = str(name_or_path)
    if os.sep not in text and "/" not in text:
        for d in search_dirs():
            for candidate in (d / text, d / f"{text}.yaml", d / f"{text}.yml"):
                if candidate.is_file():
                    return candidate
    known = ", ".join(available_topologies()) or "none"
    raise TopologyError.at(Mark(text), f"no such topology file or name (known names: {known})")


def loads_topology(text: str, file: str = "<string>") -> Fabric:
    """Parse, check and resolve topology YAML text; `file` is used in error positions.

    Raises one TopologyError listing every problem: those of the file's format and
    those of the fabric it describes (as far as the valid entries can be resolved).
    """
    errs = Collector()
    doc = parse_yaml(text, file, errs)
    spec, format_errs = read_spec(doc, file)
    errs.diagnostics.extend(format_errs.diagnostics)
    if spec is not None and errs:
        spec.partial = True  # a duplicate key's value was left out
    if spec is not None and spec.partial:
        errs.diagnostics.extend(check_spec(spec))
    errs.raise_if_any()
    assert spec is not None  # read_spec gives a spec or an error
    return build_fabric(spec)


def load_topology(name_or_path: str | os.PathLike[str]) -> Fabric:
    """Load a topology by name (e.g. 'clos4') or path; raises TopologyError on any problem."""
    path, text = _read(name_or_path)
    return loads_topology(text, str(path))


def check_topology(name_or_path: str | os.PathLike[str]) -> Fabric:
    """load_topology, and a TopologyError too for what fabric.p4 cannot program
    (emu.topo.limits): `emu topo check`, which answers whether `emu run` can run it."""
    path, text = _read(name_or_path)
    fabric = loads_topology(text, str(path))
    problems = program_limits(fabric, text, str(path))
    if problems:
        raise TopologyError(problems)
    return fabric


def _read(name_or_path: str | os.PathLike[str]) -> tuple[Path, str]:
    path = resolve_topology(name_or_path)
    try:
        return path, path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError.at(Mark(str(path)), f"cannot read: {exc}") from None
