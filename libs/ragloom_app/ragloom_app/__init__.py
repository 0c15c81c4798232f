"""Ragloom app: chat with your documents, with pluggable reasoning modes and indices."""

__version__ = "0.1.0"
