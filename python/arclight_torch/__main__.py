"""`python -m arclight_torch serve ...`, the same as the `arclight-torch` console script."""

import sys

from .cli import main

sys.exit(main())
