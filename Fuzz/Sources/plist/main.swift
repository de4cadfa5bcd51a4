import FuzzDriver

fuzzMain("plist")
