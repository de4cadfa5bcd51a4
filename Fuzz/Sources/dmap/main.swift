import FuzzDriver

fuzzMain("dmap")
