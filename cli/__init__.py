"""The ``adcheck`` command."""
if not __name__.startswith("adcheck."):     # the checkout's folder, imported by its short name
    raise ImportError(f"import adcheck.{__name__}, not {__name__}: adcheck's packages live "
                      "under the name 'adcheck' (see the README)")
