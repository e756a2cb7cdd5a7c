"""Franz benchmarks: each compares franz with a reference measured in the same run."""
