"""Render: an analysis -> the self-contained HTML report, its charts and the CSV."""
