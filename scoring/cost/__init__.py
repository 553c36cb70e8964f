"""What model calls cost: the price table and token buckets."""
