"""``python -m pyclperf``: the command line, as the guide's worker processes call it."""

import sys

from .cli import main

sys.exit(main())
