"""`python -m paimon_ds.cli`: the `paimon-ds` command."""

import sys

from . import main

sys.exit(main())
