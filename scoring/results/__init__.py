"""Run records, the history index, baselines and the turn-by-turn trace."""
