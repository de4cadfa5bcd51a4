import FuzzDriver

fuzzMain("pair-setup")
