"""One cell: its runner and process tree, its own cgroup and memory scope, the guard, kill
evidence, classification.
"""
