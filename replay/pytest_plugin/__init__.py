"""The pytest plugin: each test gets a tape that records once and replays offline, with the
network blocked.
"""
