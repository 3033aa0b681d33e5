"""``python -m wcbench`` (used by ``accelerate launch ... -m wcbench run``)."""

import sys

from wcbench.cli import main

sys.exit(main())
