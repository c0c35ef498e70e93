"""Where evidence lives: the record's location and settings, its archive, shared notes, the git
repository, info/exclude.
"""
