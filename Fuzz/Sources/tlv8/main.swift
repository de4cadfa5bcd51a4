import FuzzDriver

fuzzMain("tlv8")
