"""Benchmarks of evaltape itself; results are published in docs/performance.md."""
