import FuzzDriver

fuzzMain("sdp")
