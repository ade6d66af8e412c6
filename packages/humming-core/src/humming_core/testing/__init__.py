"""Device-agnostic test machinery that every device package re-runs under its own marker."""
