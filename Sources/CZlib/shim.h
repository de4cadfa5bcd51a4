#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H
#include <zlib.h>
/// deflateInit2 is a macro; windowBits 15 + 16 writes a gzip wrapper.
static inline int cairplay_gzip_init(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}
#endif
