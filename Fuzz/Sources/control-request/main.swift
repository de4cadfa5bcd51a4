import FuzzDriver

fuzzMain("control-request")
