"""``python -m bnviz``: see :mod:`bnviz.cli`."""

import sys

from bnviz.cli import main

sys.exit(main())
