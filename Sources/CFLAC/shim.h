// libFLAC's stream decoder, for FLACMedia (its only importer).
#pragma once
#include <FLAC/stream_decoder.h>
#include <FLAC/metadata.h>
