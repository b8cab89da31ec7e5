"""Quartermaster: admission webhook and policy engine for shared GPU platforms."""

__version__ = "0.1.0"
