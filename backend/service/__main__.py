"""``python -m backend.service``: the backend process the add-on talks to."""
import sys

from .process import main

sys.exit(main())
