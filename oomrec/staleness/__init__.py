"""Whether a record still applies at a commit: fix trailers in the log, their content in the tree,
prune and restore.
"""
