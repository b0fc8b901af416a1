#ifndef RECD_CSODIUM_SHIM_H
#define RECD_CSODIUM_SHIM_H
// libsodium: crypto_hash_sha256 (streaming) and crypto_sign (Ed25519, detached signatures).
#include <sodium.h>
#endif
