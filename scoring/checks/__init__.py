"""Deterministic checks: the trajectory fold and the outcome of the workspace."""
