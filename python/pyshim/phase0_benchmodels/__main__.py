"""``python -m phase0_benchmodels``: write one real-shaped random checkpoint (see the package docstring)."""

import sys

from phase0_benchmodels import main

sys.exit(main())
