"""Scripted policies: a script (script.py), a whole suite's solutions (suite.py), and the
OpenAI-compatible HTTP server that plays them (server.py)."""
