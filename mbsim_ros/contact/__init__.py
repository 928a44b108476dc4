"""Contact: scenes, collision shapes and their detection, contact rows (docs/COMPLIANT.md)."""
