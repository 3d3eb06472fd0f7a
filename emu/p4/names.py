"""Control-plane names of P4 objects, the way p4c writes them into P4Info.

Tables, actions and extern instances are named by their enclosing block
instances, dot-separated: a table `ipv4_lpm` in the control passed to V1Switch
as `MyIngress()` is `MyIngress.ipv4_lpm`; a control instantiated anonymously
is named by its type, an explicitly declared instance by its instance name.
`@name("x")` replaces the local name; `@name(".x")` makes the name absolute.
Top-level objects (NoAction, global externs) have no prefix.

The embedded switch, the P4Info generator and the P4Runtime server all name
objects through this module, so the three always agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def name_annotation(annotations: Sequence[Any]) -> str | None:
    """The string of an `@name("...")` annotation, if any."""
    for a in annotations:
        if a.name == "name" and a.args:
            value = a.args[0]
            if isinstance(value, str):
                return value
    return None


def qualify(scope: str | None, local_name: str, annotations: Sequence[Any] = ()) -> str:
    """Fully qualified control-plane name of an object declared in `scope`.

    `scope` is the dotted instance path of the enclosing block ("MyIngress",
    "MyIngress.c1"), or None at top level.
    """
    annotated = name_annotation(annotations)
    name = local_name if annotated is None else annotated
    if name.startswith("."):
        return name[1:]
    return f"{scope}.{name}" if scope else name
