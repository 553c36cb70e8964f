"""One attempt: the agent, its task and clients, its workspace, supervision, and scoring it."""
