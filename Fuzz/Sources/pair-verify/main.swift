import FuzzDriver

fuzzMain("pair-verify")
