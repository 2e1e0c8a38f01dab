"""Analyse: statistics and pricing over stored results -> plain data (no HTML)."""
