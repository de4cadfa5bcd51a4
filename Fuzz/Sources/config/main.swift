import FuzzDriver

fuzzMain("config")
