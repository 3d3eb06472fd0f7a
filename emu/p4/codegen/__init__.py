"""Lowering of checked P4 programs to one generated Python module per program.

`lower(checked) -> (source, ProgramInfo)`; see lower.py for the design.
"""

from .lower import ProgramInfo, lower

__all__ = ["ProgramInfo", "lower"]
