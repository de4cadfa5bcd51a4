#ifndef CAIRPLAY_CURL_SHIM_H
#define CAIRPLAY_CURL_SHIM_H
// libcurl's types and constants come from its header; its code is loaded on first use
// (curl_loader.c), so a daemon that never fetches a URL never maps libcurl and its TLS, LDAP,
// Kerberos and SSH chain (about 3.7 MiB resident when linked at start).
#include <curl/curl.h>

/// Loads libcurl.so.4 and runs curl_global_init, once. NULL when ready, else why not.
const char *cairplay_curl_load(void);

/// The libcurl calls we make, through the loaded library. Call cairplay_curl_load first.
CURL *cairplay_curl_easy_init(void);
void cairplay_curl_easy_cleanup(CURL *handle);
CURLcode cairplay_curl_easy_perform(CURL *handle);
const char *cairplay_curl_easy_strerror(CURLcode code);
struct curl_slist *cairplay_curl_slist_append(struct curl_slist *list, const char *line);
void cairplay_curl_slist_free_all(struct curl_slist *list);

/// curl_easy_setopt is variadic, which Swift cannot call: one typed wrapper per argument kind.
CURLcode cairplay_curl_set_long(CURL *handle, CURLoption option, long value);
CURLcode cairplay_curl_set_string(CURL *handle, CURLoption option, const char *value);
CURLcode cairplay_curl_set_pointer(CURL *handle, CURLoption option, void *value);
CURLcode cairplay_curl_set_off(CURL *handle, CURLoption option, curl_off_t value);
typedef size_t (*cairplay_curl_write_callback)(char *data, size_t size, size_t count, void *context);
CURLcode cairplay_curl_set_write(CURL *handle, cairplay_curl_write_callback callback, void *context);

/// Makes every connection the handle opens (redirects and every address a name resolves to
/// included) refuse loopback, link-local and unspecified addresses, checked on the address
/// actually connected, so neither a redirect nor a DNS answer that changes between check and
/// use can reach the box itself. `*refused` is set to 1 when a connection was refused.
CURLcode cairplay_curl_refuse_local_targets(CURL *handle, int *refused);

/// Whether an address is loopback, link-local or unspecified (IPv4, IPv6, IPv4-mapped IPv6).
int cairplay_address_is_local(const struct sockaddr *address);

/// curl_easy_getinfo, typed: the response status and the URL after redirects.
long cairplay_curl_status(CURL *handle);
const char *cairplay_curl_effective_url(CURL *handle);
#endif
