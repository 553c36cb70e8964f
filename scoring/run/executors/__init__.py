"""Where a run's jobs are computed: the executor seam, the thread pool, and Ray."""
