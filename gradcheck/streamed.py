"""Placeholder replaced below."""
def streamed(ev, report, rng, options):
    raise NotImplementedError
