"""The OOM frontier: the scan of CSVs and records, and its text and HTML views."""
