import FuzzDriver

fuzzMain("video-action")
