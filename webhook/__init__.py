"""Quartermaster: admission webhook and policy engine for shared GPU platforms."""

import os as _os

__version__ = "0.1.0"

if _os.environ.get("QUARTERMASTER_PURE_PYTHON"):  # set at all: webhook/pure_python.py reads what it asks
    from webhook.pure_python import prefer_sources as _prefer_sources

    _prefer_sources()
