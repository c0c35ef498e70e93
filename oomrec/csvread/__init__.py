"""Reading the harness's CSV files: finding and opening them safely (`files`), and the one reader
of their rows (`rows`), which every view of a row goes through."""
