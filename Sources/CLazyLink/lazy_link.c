#include "lazy_link.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

const char *cairplay_lazy_open(cairplay_lazy_library *library) {
    pthread_mutex_lock(&library->lock);
    if (!library->attempted) {
        library->attempted = 1;
        // RTLD_GLOBAL: a library loaded later that needs this one (libcurl needs libcrypto)
        // finds the same copy, as it would have at exec.
        library->handle = dlopen(library->soname, RTLD_NOW | RTLD_GLOBAL);
        if (library->handle == NULL) library->error = "cannot be loaded";
    }
    const char *error = library->error;
    pthread_mutex_unlock(&library->lock);
    return error;
}

void *cairplay_lazy_symbol(cairplay_lazy_library *library, const char *name) {
    if (cairplay_lazy_open(library) != NULL) {
        fprintf(stderr, "%s cannot be loaded (install %s); %s needs it\n", library->soname, library->package, name);
        abort();
    }
    void *symbol = dlsym(library->handle, name);
    if (symbol == NULL) {
        fprintf(stderr, "%s has no %s (install a current %s)\n", library->soname, name, library->package);
        abort();
    }
    return symbol;
}

void *cairplay_lazy_cached(cairplay_lazy_library *library, void *_Atomic *slot, const char *name) {
    void *symbol = atomic_load_explicit(slot, memory_order_acquire);
    if (symbol == NULL) {
        symbol = cairplay_lazy_symbol(library, name);
        atomic_store_explicit(slot, symbol, memory_order_release);
    }
    return symbol;
}
