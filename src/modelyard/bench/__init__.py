"""Load generation and reports for `modelyard bench`."""
