"""The facts every view reads: the record and its line format, the harness's CSV schema, hardware
tags, settings, errors.
"""
