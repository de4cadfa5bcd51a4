#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
// OpenSSL's types and constants come from its headers; its code is loaded on the first call
// (crypto_forwarders.c), so a daemon no sender has paired with or challenged yet never maps
// libcrypto.
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

/// Loads libcrypto.so.3 now. NULL when it is loaded, else why not. Not needed before a call:
/// every OpenSSL entry point we use loads it on its first call.
const char *cairplay_crypto_load(void);
#endif
