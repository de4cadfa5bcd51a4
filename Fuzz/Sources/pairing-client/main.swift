import FuzzDriver

fuzzMain("pairing-client")
