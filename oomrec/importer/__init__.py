"""Backfilling the record from existing benchmark CSVs: the scan, the row parse, the import."""
