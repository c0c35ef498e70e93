"""The sweep: its options, the grid planned and run, resume, the demo, the fleet."""
