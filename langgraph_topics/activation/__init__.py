"""Grey activation and recall cues (seed 000 §4.7, §16.2)."""
