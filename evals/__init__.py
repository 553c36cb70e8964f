"""The project's own suites, reference agent (``evals.agent:run``) and benchmarks."""
