"""The scripted offline demo conversation."""
