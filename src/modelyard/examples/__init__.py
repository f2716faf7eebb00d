"""Example model repository built from scikit-learn's bundled datasets (no downloads)."""
