"""The git hooks: the check they run and the hook files."""
