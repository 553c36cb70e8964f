"""Agents and servers the tests run (a package, so the openai-agents distribution's
top-level ``agents`` does not shadow it)."""
