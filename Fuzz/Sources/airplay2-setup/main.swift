import FuzzDriver

fuzzMain("airplay2-setup")
