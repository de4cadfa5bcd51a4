import FuzzDriver

fuzzMain("variant-qualifier")
