"""Humming's NVIDIA device package."""
