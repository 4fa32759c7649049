"""Foundations every layer uses and that touch nothing outside the process: settings, errors,
validated models, the language setting, text helpers, retries and deadlines."""
