"""Launchers: run a serving stack's own entry point with an AoiZora plan's device order.

They import nothing of AoiZora's planning side (no jaxenv: the real TPU must stay the
backend), only the plan file they are given.
"""
