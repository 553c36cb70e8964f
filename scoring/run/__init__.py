"""Running attempts: the agent, its task, the workspace, jobs and the pool, rescoring."""
