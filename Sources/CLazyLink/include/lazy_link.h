#ifndef CAIRPLAY_LAZY_LINK_H
#define CAIRPLAY_LAZY_LINK_H
// A shared library opened on the first call into it rather than at exec. The kernel maps a
// library's pages in large folios, so merely linking libcrypto (and libmosquitto, which pulls
// in libssl and libcrypto) cost an idle daemon about 3.7 MiB resident before any pairing,
// RSA challenge or MQTT broker asked for it.
//
// A module that loads its library this way defines each entry point it uses under the
// library's own name with CAIRPLAY_LAZY_FORWARD, so the Swift code calling it is unchanged and
// the compiler checks every definition against the library's header.
#include <pthread.h>
#include <stdatomic.h>

/// A library opened on first use: its soname and what to install when it is missing.
typedef struct {
    const char *soname;
    const char *package;
    pthread_mutex_t lock;
    int attempted;
    void *handle;
    const char *error;
} cairplay_lazy_library;

/// A library declaration for a file-scope variable.
#define CAIRPLAY_LAZY_LIBRARY(soname, package) { soname, package, PTHREAD_MUTEX_INITIALIZER, 0, NULL, NULL }

/// Opens the library once. NULL when it is loaded, else why it is not (with what to install).
const char *cairplay_lazy_open(cairplay_lazy_library *library);

/// The address of one of the library's entry points. A missing library or symbol at this point
/// is a broken installation, as a missing linked library would be at exec: it is reported on
/// standard error with what to install, and the process aborts.
void *cairplay_lazy_symbol(cairplay_lazy_library *library, const char *name);

/// The address of `name` in `library`, kept in `slot` after the first call (a race resolves
/// the same address twice, which is harmless).
void *cairplay_lazy_cached(cairplay_lazy_library *library, void *_Atomic *slot, const char *name);

/// Defines `ret name params` as a call through the library, resolved on its first call.
#define CAIRPLAY_LAZY_FORWARD(library, ret, name, params, args) \
    ret name params { \
        static void *_Atomic entry; \
        return ((__typeof__(&name))cairplay_lazy_cached(&library, &entry, #name)) args; \
    }

/// CAIRPLAY_LAZY_FORWARD for entry points that return nothing.
#define CAIRPLAY_LAZY_FORWARD_VOID(library, name, params, args) \
    void name params { \
        static void *_Atomic entry; \
        ((__typeof__(&name))cairplay_lazy_cached(&library, &entry, #name)) args; \
    }
#endif
