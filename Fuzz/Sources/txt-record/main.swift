import FuzzDriver

fuzzMain("txt-record")
