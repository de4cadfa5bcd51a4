#include "curl_shim.h"
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

// The entry points we resolve from libcurl.so.4 (its soname since 7.16, stable ABI).
static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *handle);
    CURLcode (*easy_perform)(CURL *handle);
    const char *(*easy_strerror)(CURLcode code);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *line);
    void (*slist_free_all)(struct curl_slist *list);
} api;
static const char *load_error;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void *resolve(void *library, const char *name) {
    void *symbol = dlsym(library, name);
    if (symbol == NULL && load_error == NULL) load_error = "libcurl.so.4 lacks a libcurl entry point";
    return symbol;
}

static void load(void) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        load_error = "libcurl.so.4 cannot be loaded (install libcurl4)";
        return;
    }
    *(void **)&api.global_init = resolve(library, "curl_global_init");
    *(void **)&api.easy_init = resolve(library, "curl_easy_init");
    *(void **)&api.easy_cleanup = resolve(library, "curl_easy_cleanup");
    *(void **)&api.easy_perform = resolve(library, "curl_easy_perform");
    *(void **)&api.easy_strerror = resolve(library, "curl_easy_strerror");
    *(void **)&api.easy_setopt = resolve(library, "curl_easy_setopt");
    *(void **)&api.easy_getinfo = resolve(library, "curl_easy_getinfo");
    *(void **)&api.slist_append = resolve(library, "curl_slist_append");
    *(void **)&api.slist_free_all = resolve(library, "curl_slist_free_all");
    if (load_error == NULL && api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) load_error = "curl_global_init failed";
}

const char *cairplay_curl_load(void) {
    pthread_once(&load_once, load);
    return load_error;
}

CURL *cairplay_curl_easy_init(void) { return api.easy_init(); }
void cairplay_curl_easy_cleanup(CURL *handle) { api.easy_cleanup(handle); }
CURLcode cairplay_curl_easy_perform(CURL *handle) { return api.easy_perform(handle); }
const char *cairplay_curl_easy_strerror(CURLcode code) { return api.easy_strerror(code); }
struct curl_slist *cairplay_curl_slist_append(struct curl_slist *list, const char *line) { return api.slist_append(list, line); }
void cairplay_curl_slist_free_all(struct curl_slist *list) { api.slist_free_all(list); }

CURLcode cairplay_curl_set_long(CURL *handle, CURLoption option, long value) { return api.easy_setopt(handle, option, value); }
CURLcode cairplay_curl_set_string(CURL *handle, CURLoption option, const char *value) { return api.easy_setopt(handle, option, value); }
CURLcode cairplay_curl_set_pointer(CURL *handle, CURLoption option, void *value) { return api.easy_setopt(handle, option, value); }
CURLcode cairplay_curl_set_off(CURL *handle, CURLoption option, curl_off_t value) { return api.easy_setopt(handle, option, value); }

CURLcode cairplay_curl_set_write(CURL *handle, cairplay_curl_write_callback callback, void *context) {
    CURLcode code = api.easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
    if (code != CURLE_OK) return code;
    return api.easy_setopt(handle, CURLOPT_WRITEDATA, context);
}

int cairplay_address_is_local(const struct sockaddr *address) {
    if (address->sa_family == AF_INET) {
        uint32_t value = ntohl(((const struct sockaddr_in *)address)->sin_addr.s_addr);
        return (value >> 24) == 127 || (value >> 16) == 0xA9FE || (value >> 24) == 0;
    }
    if (address->sa_family == AF_INET6) {
        const uint8_t *bytes = ((const struct sockaddr_in6 *)address)->sin6_addr.s6_addr;
        static const uint8_t zeros[16] = {0};
        int loopback = memcmp(bytes, zeros, 15) == 0 && (bytes[15] == 1 || bytes[15] == 0);
        int link_local = bytes[0] == 0xFE && (bytes[1] & 0xC0) == 0x80;
        int mapped = memcmp(bytes, zeros, 10) == 0 && bytes[10] == 0xFF && bytes[11] == 0xFF;
        int mapped_local = mapped && (bytes[12] == 127 || bytes[12] == 0 || (bytes[12] == 169 && bytes[13] == 254));
        return loopback || link_local || mapped_local;
    }
    return 1; // Unix sockets and anything else: never on a sender's say-so.
}

static curl_socket_t open_public_only(void *refused, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    if (cairplay_address_is_local(&address->addr)) {
        if (refused != NULL) *(int *)refused = 1;
        return CURL_SOCKET_BAD;
    }
    return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

CURLcode cairplay_curl_refuse_local_targets(CURL *handle, int *refused) {
    CURLcode code = api.easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, open_public_only);
    if (code != CURLE_OK) return code;
    return api.easy_setopt(handle, CURLOPT_OPENSOCKETDATA, (void *)refused);
}

long cairplay_curl_status(CURL *handle) {
    long status = 0;
    api.easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

const char *cairplay_curl_effective_url(CURL *handle) {
    char *url = NULL;
    api.easy_getinfo(handle, CURLINFO_EFFECTIVE_URL, &url);
    return url;
}
