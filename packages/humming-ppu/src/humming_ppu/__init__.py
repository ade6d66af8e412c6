"""Humming's T-Head Zhenwu PPU device package."""
