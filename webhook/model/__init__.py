"""Leaf layer: wire types, the frozen request view, verdicts and errors. Imports nothing of ours."""
