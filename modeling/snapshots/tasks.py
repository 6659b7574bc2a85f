"""Export tasks: filled in by the snapshot work."""
