"""Middleware that keeps every run honest and bounded; one module per concern."""
