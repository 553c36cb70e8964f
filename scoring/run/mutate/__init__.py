"""Mutation testing of recordings: standard bugs planted in a copy of a Python agent's tools,
each copy replayed, and which bugs the tapes catch (``evaltape coverage --mutate``)."""
