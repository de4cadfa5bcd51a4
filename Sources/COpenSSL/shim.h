#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/bio.h>
#include <openssl/kdf.h>
#include <openssl/bn.h>

/// OpenSSL_version_num is a function; the version text macro is not importable as a value.
static inline const char *cairplay_openssl_version(void) { return OpenSSL_version(OPENSSL_VERSION); }
#endif
