"""Users' own models for the tests of `coloc probe` with an import path (tests/ on PYTHONPATH)."""
