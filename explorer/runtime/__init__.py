"""What touches the machine: worker processes, slots, jobs, stores on disk, caches."""
