"""Training tasks: filled in by the training work."""
