import FuzzDriver

fuzzMain("sender-response")
