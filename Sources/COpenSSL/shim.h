#ifndef RECD_COPENSSL_SHIM_H
#define RECD_COPENSSL_SHIM_H
// OpenSSL's libcrypto, for X.509 certificates (module PKI only). Making a certificate takes a
// dozen calls with C macros and out-parameters; they live here as one fixed-argument function,
// so Swift sees a certificate in and PEM text out.
#include <stdlib.h>
#include <string.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/// A BIO's contents as a NUL-terminated malloc'd string (NULL on failure).
static inline char *recd_bio_text(BIO *bio)
{
    char *data = NULL;
    long length = BIO_get_mem_data(bio, &data);
    if (length < 0) return NULL;
    char *text = malloc((size_t)length + 1);
    if (text == NULL) return NULL;
    memcpy(text, data, (size_t)length);
    text[length] = 0;
    return text;
}

static inline int recd_add_extension(X509 *certificate, int nid, const char *value)
{
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, certificate, certificate, NULL, NULL, 0);
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, &context, nid, value);
    if (extension == NULL) return 0;
    int added = X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
    return added;
}

/// A self-signed certificate on a new P-256 key: subject and issuer CN=`common_name`, valid from
/// an hour ago for `days`, with subjectAltName `alt_names` (OpenSSL's syntax: "DNS:x,IP:1.2.3.4"),
/// signed with SHA-256. On success *certificate_pem and *key_pem (PKCS#8) are malloc'd: the
/// caller frees them. Returns 1 on success, 0 on failure.
static inline int recd_make_self_signed(
    const char *common_name, const char *alt_names, int days, char **certificate_pem, char **key_pem)
{
    int ok = 0;
    *certificate_pem = NULL;
    *key_pem = NULL;
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    X509 *certificate = X509_new();
    BIO *certificate_bio = BIO_new(BIO_s_mem());
    BIO *key_bio = BIO_new(BIO_s_mem());
    unsigned char serial[16];
    BIGNUM *serial_number = NULL;
    if (key == NULL || certificate == NULL || certificate_bio == NULL || key_bio == NULL) goto done;
    if (RAND_bytes(serial, sizeof serial) != 1) goto done;
    serial[0] &= 0x7f;  // a positive INTEGER
    serial_number = BN_bin2bn(serial, sizeof serial, NULL);
    if (serial_number == NULL || BN_to_ASN1_INTEGER(serial_number, X509_get_serialNumber(certificate)) == NULL)
        goto done;
    if (X509_set_version(certificate, 2) != 1) goto done;
    if (X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) == NULL) goto done;
    if (X509_time_adj_ex(X509_getm_notAfter(certificate), days, 0, NULL) == NULL) goto done;
    X509_NAME *name = X509_get_subject_name(certificate);
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)common_name, -1, -1, 0) != 1)
        goto done;
    if (X509_set_issuer_name(certificate, name) != 1) goto done;
    if (X509_set_pubkey(certificate, key) != 1) goto done;
    // As `openssl req -x509` makes them: its own authority, so `curl --cacert` trusts it directly.
    if (!recd_add_extension(certificate, NID_basic_constraints, "critical,CA:TRUE")) goto done;
    if (!recd_add_extension(certificate, NID_key_usage, "critical,digitalSignature,keyCertSign")) goto done;
    if (!recd_add_extension(certificate, NID_ext_key_usage, "serverAuth")) goto done;
    if (!recd_add_extension(certificate, NID_subject_key_identifier, "hash")) goto done;
    if (alt_names[0] != 0 && !recd_add_extension(certificate, NID_subject_alt_name, alt_names)) goto done;
    if (X509_sign(certificate, key, EVP_sha256()) == 0) goto done;
    if (PEM_write_bio_X509(certificate_bio, certificate) != 1) goto done;
    if (PEM_write_bio_PrivateKey(key_bio, key, NULL, NULL, 0, NULL, NULL) != 1) goto done;
    *certificate_pem = recd_bio_text(certificate_bio);
    *key_pem = recd_bio_text(key_bio);
    ok = *certificate_pem != NULL && *key_pem != NULL;
done:
    if (!ok) {
        free(*certificate_pem);
        free(*key_pem);
        *certificate_pem = NULL;
        *key_pem = NULL;
    }
    BN_free(serial_number);
    BIO_free(certificate_bio);
    BIO_free(key_bio);
    X509_free(certificate);
    EVP_PKEY_free(key);
    return ok;
}

/// The SHA-256 of the first certificate in `pem` (its DER), into `digest` (32 bytes). 1 on success.
static inline int recd_certificate_sha256(const char *pem, size_t length, unsigned char *digest)
{
    if (length > 1 << 20) return 0;
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return 0;
    X509 *certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (certificate == NULL) return 0;
    unsigned int size = 0;
    int ok = X509_digest(certificate, EVP_sha256(), digest, &size) == 1 && size == 32;
    X509_free(certificate);
    return ok;
}

/// Whether `key_pem` is a private key OpenSSL can read (1) or not (0).
static inline int recd_private_key_readable(const char *pem, size_t length)
{
    if (length > 1 << 20) return 0;
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return 0;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (key == NULL) return 0;
    EVP_PKEY_free(key);
    return 1;
}
#endif
