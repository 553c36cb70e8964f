"""evaltape.scoring: cases, scorers, statistics, results and gates."""

__all__: list[str] = []
