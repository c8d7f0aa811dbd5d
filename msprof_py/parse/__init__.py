"""Raw PROF data -> pandas tables (see :mod:`msprof_py.parse.schema` for every column)."""
