"""Run records, the history index and baselines."""
