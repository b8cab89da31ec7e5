"""Imported at start-up by a Python whose PYTHONPATH holds this directory (and load-tests/): see steptimer.server_hook."""

import steptimer

steptimer.server_hook()
