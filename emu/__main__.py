"""`python -m emu` is the same as the `emu` console script."""

import sys

from emu.cli import main

sys.exit(main())
