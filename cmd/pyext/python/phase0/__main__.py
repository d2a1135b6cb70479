"""``python -m phase0 …`` behaves like the phase0 command (same flags, output and exit codes)."""

import sys

from phase0 import main

sys.exit(main())
