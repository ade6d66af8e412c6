"""vLLM plugin serving quantized checkpoints on Humming kernels."""


def register() -> None:
    """vLLM `general_plugins` entry point (idempotent). The integration lands with issue 11."""
