"""Integrations with agent frameworks (each an optional extra)."""
