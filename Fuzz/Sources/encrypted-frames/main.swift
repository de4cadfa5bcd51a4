import FuzzDriver

fuzzMain("encrypted-frames")
