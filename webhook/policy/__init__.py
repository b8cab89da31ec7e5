"""Load and validate policy YAML, compile it once, publish immutable snapshots."""
