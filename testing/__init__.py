"""The harness shared by the tests and the benchmarks: the real app in a temporary home, under Xvfb
and the socket audit."""
