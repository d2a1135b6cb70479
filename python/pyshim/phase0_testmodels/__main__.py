"""``python -m phase0_testmodels``: write one tiny test checkpoint (see the package docstring)."""

import sys

from phase0_testmodels import main

sys.exit(main())
