import FuzzDriver

fuzzMain("play-request")
