import FuzzDriver

fuzzMain("data-stream")
