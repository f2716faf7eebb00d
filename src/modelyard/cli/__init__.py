"""Thin commands over the public API."""
