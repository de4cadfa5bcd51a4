import FuzzDriver

fuzzMain("ptp")
