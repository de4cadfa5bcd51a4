import FuzzDriver

fuzzMain("rtsp-transport")
