"""The ``adcheck`` command."""
