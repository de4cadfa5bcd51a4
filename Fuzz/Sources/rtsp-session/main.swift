import FuzzDriver

fuzzMain("rtsp-session")
