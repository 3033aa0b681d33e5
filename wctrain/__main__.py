"""``python -m wctrain`` (used by ``accelerate launch ... -m wctrain train``)."""

import sys

from wctrain.cli import main

sys.exit(main())
