"""roles native package."""
