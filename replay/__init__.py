"""evaltape.replay: everything that consumes a tape to drive an agent again."""

__all__: list[str] = []
