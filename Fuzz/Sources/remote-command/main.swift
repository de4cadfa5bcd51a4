import FuzzDriver

fuzzMain("remote-command")
