import FuzzDriver

fuzzMain("raop-packet")
