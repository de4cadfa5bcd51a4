import FuzzDriver

fuzzMain("hls-playlist")
