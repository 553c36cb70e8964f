"""The local HTTP proxy that records or replays any program's model traffic, and running
programs behind it.
"""
