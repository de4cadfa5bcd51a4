#ifndef CAIRPLAY_CURL_SHIM_H
#define CAIRPLAY_CURL_SHIM_H
#include <curl/curl.h>

/// curl_easy_setopt is variadic, which Swift cannot call: one typed wrapper per argument kind.
static inline CURLcode cairplay_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode cairplay_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode cairplay_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode cairplay_curl_set_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
typedef size_t (*cairplay_curl_write_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode cairplay_curl_set_write(CURL *handle, cairplay_curl_write_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
    if (code != CURLE_OK) return code;
    return curl_easy_setopt(handle, CURLOPT_WRITEDATA, context);
}
static inline long cairplay_curl_status(CURL *handle) {
    long status = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
    return status;
}
static inline const char *cairplay_curl_effective_url(CURL *handle) {
    char *url = NULL;
    curl_easy_getinfo(handle, CURLINFO_EFFECTIVE_URL, &url);
    return url;
}
#endif
