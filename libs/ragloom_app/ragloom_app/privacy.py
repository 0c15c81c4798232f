"""Switch off every phone-home of the libraries the app uses.

Gradio sends analytics and checks its version online, Hugging Face libraries send
telemetry and look up models on the hub, Chroma sends anonymized telemetry. The app sets
these before any of them is imported; a user who sets a variable themselves keeps it.
"""

from __future__ import annotations

import os

__all__ = ["OFFLINE_ENVIRONMENT", "switch_off_telemetry"]

OFFLINE_ENVIRONMENT = {
    "GRADIO_ANALYTICS_ENABLED": "False",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "DO_NOT_TRACK": "1",
}


def switch_off_telemetry() -> None:
    """Set the variables of :data:`OFFLINE_ENVIRONMENT` that the user has not set."""
    for name, value in OFFLINE_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
