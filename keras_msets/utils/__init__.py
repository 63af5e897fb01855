"""Helpers below every other part of the package (argument checks)."""
