#ifndef TESSERA_RSA_H
#define TESSERA_RSA_H

#include <stddef.h>
#include <stdint.h>

/// An RSA private key held by the system's OpenSSL (libcrypto 3), used only to sign RS256.
/// OpenSSL 3 signs RSA-2048 with AVX-512 IFMA where the CPU has it, several times faster than the
/// generic code path; signatures are PKCS #1 v1.5, deterministic, byte-identical to any other
/// correct implementation. A key may be used by several threads at once (it is only read).
typedef struct tessera_rsa_key tessera_rsa_key;

/// Parses a PEM private key (PKCS #1 or PKCS #8). NULL if it is not an RSA private key.
tessera_rsa_key *tessera_rsa_key_from_pem(const char *pem, size_t length);

void tessera_rsa_key_free(tessera_rsa_key *key);

/// The signature length in bytes (the modulus size).
size_t tessera_rsa_signature_size(const tessera_rsa_key *key);

/// RSASSA-PKCS1-v1_5 with SHA-256 over `message`. `signature` must hold
/// tessera_rsa_signature_size(key) bytes; `*signature_length` receives the length written.
/// Returns 0 on success, -1 on failure.
int tessera_rsa_sign_sha256(const tessera_rsa_key *key, const uint8_t *message, size_t message_length,
                            uint8_t *signature, size_t *signature_length);

#endif
