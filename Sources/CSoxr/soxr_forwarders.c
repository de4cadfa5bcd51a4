// Every libsoxr entry point the Swift code calls, defined under its own name and forwarded to
// libsoxr.so.0, opened by cairplay_soxr_load or the first call. To call another libsoxr
// function, add its line here (the link fails until it is added).
#include "soxr_shim.h"
#include "lazy_link.h"

static cairplay_lazy_library libsoxr = CAIRPLAY_LAZY_LIBRARY("libsoxr.so.0", "libsoxr0");

const char *cairplay_soxr_load(void) { return cairplay_lazy_open(&libsoxr); }

CAIRPLAY_LAZY_FORWARD(libsoxr, soxr_error_t, soxr_oneshot,
                      (double input_rate, double output_rate, unsigned num_channels, soxr_in_t in, size_t ilen, size_t *idone,
                       soxr_out_t out, size_t olen, size_t *odone, soxr_io_spec_t const *io_spec,
                       soxr_quality_spec_t const *quality_spec, soxr_runtime_spec_t const *runtime_spec),
                      (input_rate, output_rate, num_channels, in, ilen, idone, out, olen, odone, io_spec, quality_spec, runtime_spec))
CAIRPLAY_LAZY_FORWARD(libsoxr, soxr_quality_spec_t, soxr_quality_spec, (unsigned long recipe, unsigned long flags), (recipe, flags))
CAIRPLAY_LAZY_FORWARD(libsoxr, soxr_io_spec_t, soxr_io_spec, (soxr_datatype_t itype, soxr_datatype_t otype), (itype, otype))
