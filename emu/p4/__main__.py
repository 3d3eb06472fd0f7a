"""`python -m emu.p4`: see emu/p4/cli.py."""

import sys

from emu.p4.cli import main

sys.exit(main())
