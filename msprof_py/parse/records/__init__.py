"""One decoder per raw record kind: each turns a stream's records (dtype from
:mod:`msprof_py.raw`) into plain numpy columns, with hashes resolved through :class:`Dictionaries`.
"""
