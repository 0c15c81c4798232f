"""Agents: tools an LLM can call, and the loops that call them."""
