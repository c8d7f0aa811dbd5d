"""Analysis over parsed sessions: advice (``advise``) and run comparison (``diff``).

Reads only :class:`msprof_py.parse.session.Session` tables (never the runtime or raw files),
so it works the same on simulated and real PROF dirs.
"""
