import FuzzDriver

fuzzMain("hls-attributes")
