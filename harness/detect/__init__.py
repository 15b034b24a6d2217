"""Many runs: suites (a matrix of scenarios x seeds x versions), the zoo (mutants that must be
caught, controls that must not) and explore (a Hypothesis search over fault schedules)."""
