import FuzzDriver

fuzzMain("alac")
