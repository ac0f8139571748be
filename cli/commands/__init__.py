"""One module per adcheck command."""
