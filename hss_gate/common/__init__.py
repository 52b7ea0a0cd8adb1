"""Storage, I/O and the plumbing every floor uses: errors, atomic files, JSON Lines, the cache, the
run's inputs, progress and logs."""
