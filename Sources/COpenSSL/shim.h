#ifndef RECD_COPENSSL_SHIM_H
#define RECD_COPENSSL_SHIM_H
// OpenSSL's libcrypto, for X.509 certificates (module PKI only). Making a certificate takes a
// dozen calls with C macros and out-parameters; they live here as one fixed-argument function,
// so Swift sees a certificate in and PEM text out.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/err.h>
#include <openssl/ts.h>

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
// The archive key's certificates (C2PA Content Credentials on exported clips): a box CA of its
// own and a leaf for the archive's Ed25519 key issued by it, a PKCS#10 request for that key
// signed outside OpenSSL (libsodium holds the secret), and a PEM chain read back as DER.

/// Adds extension `nid` = `value` (OpenSSL's config syntax) to `certificate`, issued by `issuer`.
static inline int recd_add_issued_extension(X509 *issuer, X509 *certificate, int nid, const char *value)
{
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, issuer, certificate, NULL, NULL, 0);
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, &context, nid, value);
    if (extension == NULL) return 0;
    int added = X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
    return added;
}

/// A random positive 128-bit serial, a subject CN, validity from an hour ago for `days`.
static inline int recd_certificate_basics(X509 *certificate, const char *common_name, int days)
{
    unsigned char serial[16];
    if (RAND_bytes(serial, sizeof serial) != 1) return 0;
    serial[0] = (serial[0] & 0x7f) | 0x01;
    BIGNUM *number = BN_bin2bn(serial, sizeof serial, NULL);
    int ok = number != NULL && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != NULL;
    BN_free(number);
    if (!ok || X509_set_version(certificate, 2) != 1) return 0;
    if (X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) == NULL) return 0;
    if (X509_time_adj_ex(X509_getm_notAfter(certificate), days, 0, NULL) == NULL) return 0;
    X509_NAME *name = X509_get_subject_name(certificate);
    return X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"recd", -1, -1, 0) == 1
        && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)common_name, -1, -1, 0) == 1;
}

/// A box CA (a new Ed25519 key, self-signed, CA:TRUE, keyCertSign) and a leaf for the Ed25519
/// `public_key` (32 bytes) issued by it: CA:FALSE, digitalSignature, extended key usage
/// emailProtection and documentSigning (what C2PA accepts of a signer), subject and authority
/// key identifiers. The CA's key is dropped once the leaf is signed: nothing else is ever issued
/// under it. *leaf_pem and *ca_pem are malloc'd (the caller frees them). 1 on success.
static inline int recd_make_box_certificates(
    const unsigned char *public_key, const char *ca_name, const char *leaf_name, int days, char **leaf_pem,
    char **ca_pem)
{
    int ok = 0;
    *leaf_pem = NULL;
    *ca_pem = NULL;
    EVP_PKEY *ca_key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    EVP_PKEY *leaf_key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, public_key, 32);
    X509 *ca = X509_new();
    X509 *leaf = X509_new();
    BIO *leaf_bio = BIO_new(BIO_s_mem());
    BIO *ca_bio = BIO_new(BIO_s_mem());
    if (ca_key == NULL || leaf_key == NULL || ca == NULL || leaf == NULL || leaf_bio == NULL || ca_bio == NULL)
        goto done;
    if (!recd_certificate_basics(ca, ca_name, days + 1)) goto done;
    if (X509_set_issuer_name(ca, X509_get_subject_name(ca)) != 1 || X509_set_pubkey(ca, ca_key) != 1) goto done;
    if (!recd_add_issued_extension(ca, ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0")) goto done;
    if (!recd_add_issued_extension(ca, ca, NID_key_usage, "critical,keyCertSign,cRLSign")) goto done;
    if (!recd_add_issued_extension(ca, ca, NID_subject_key_identifier, "hash")) goto done;
    if (X509_sign(ca, ca_key, NULL) == 0) goto done;
    if (!recd_certificate_basics(leaf, leaf_name, days)) goto done;
    if (X509_set_issuer_name(leaf, X509_get_subject_name(ca)) != 1 || X509_set_pubkey(leaf, leaf_key) != 1)
        goto done;
    if (!recd_add_issued_extension(ca, leaf, NID_basic_constraints, "critical,CA:FALSE")) goto done;
    if (!recd_add_issued_extension(ca, leaf, NID_key_usage, "critical,digitalSignature")) goto done;
    if (!recd_add_issued_extension(ca, leaf, NID_ext_key_usage, "emailProtection,1.3.6.1.5.5.7.3.36")) goto done;
    if (!recd_add_issued_extension(ca, leaf, NID_subject_key_identifier, "hash")) goto done;
    if (!recd_add_issued_extension(ca, leaf, NID_authority_key_identifier, "keyid:always")) goto done;
    if (X509_sign(leaf, ca_key, NULL) == 0) goto done;
    if (PEM_write_bio_X509(leaf_bio, leaf) != 1 || PEM_write_bio_X509(ca_bio, ca) != 1) goto done;
    *leaf_pem = recd_bio_text(leaf_bio);
    *ca_pem = recd_bio_text(ca_bio);
    ok = *leaf_pem != NULL && *ca_pem != NULL;
done:
    if (!ok) {
        free(*leaf_pem);
        free(*ca_pem);
        *leaf_pem = NULL;
        *ca_pem = NULL;
    }
    BIO_free(leaf_bio);
    BIO_free(ca_bio);
    X509_free(leaf);
    X509_free(ca);
    EVP_PKEY_free(leaf_key);
    EVP_PKEY_free(ca_key);
    return ok;
}

/// The PKCS#10 request for the Ed25519 `public_key` (32 bytes), subject O=recd, CN=`common_name`,
/// asking for the leaf's extensions. Deterministic: the same arguments give the same request, so
/// its to-be-signed part can be signed elsewhere and the request made again with `signature`
/// (64 bytes). With `signature` NULL: *der is the to-be-signed DER (CertificationRequestInfo);
/// else *der is the whole request in PEM, checked against `public_key`. *der is malloc'd. 1 on
/// success.
static inline int recd_ed25519_request(
    const unsigned char *public_key, const char *common_name, const unsigned char *signature, unsigned char **der,
    int *der_length)
{
    int ok = 0;
    *der = NULL;
    *der_length = 0;
    EVP_PKEY *key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, public_key, 32);
    X509_REQ *request = X509_REQ_new();
    STACK_OF(X509_EXTENSION) *extensions = sk_X509_EXTENSION_new_null();
    X509_ALGOR *algorithm = NULL;
    ASN1_BIT_STRING *bits = NULL;
    BIO *bio = NULL;
    if (key == NULL || request == NULL || extensions == NULL) goto done;
    if (X509_REQ_set_version(request, 0) != 1 || X509_REQ_set_pubkey(request, key) != 1) goto done;
    X509_NAME *name = X509_REQ_get_subject_name(request);
    if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"recd", -1, -1, 0) != 1
        || X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)common_name, -1, -1, 0) != 1)
        goto done;
    const int nids[3] = {NID_basic_constraints, NID_key_usage, NID_ext_key_usage};
    const char *values[3] = {"critical,CA:FALSE", "critical,digitalSignature", "emailProtection,1.3.6.1.5.5.7.3.36"};
    for (int index = 0; index < 3; index++) {
        X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, NULL, nids[index], values[index]);
        if (extension == NULL || !sk_X509_EXTENSION_push(extensions, extension)) {
            X509_EXTENSION_free(extension);
            goto done;
        }
    }
    if (X509_REQ_add_extensions(request, extensions) != 1) goto done;
    if (signature == NULL) {
        int length = i2d_re_X509_REQ_tbs(request, NULL);
        if (length <= 0) goto done;
        *der = malloc((size_t)length);
        if (*der == NULL) goto done;
        unsigned char *cursor = *der;
        if (i2d_re_X509_REQ_tbs(request, &cursor) != length) goto done;
        *der_length = length;
        ok = 1;
        goto done;
    }
    algorithm = X509_ALGOR_new();
    bits = ASN1_BIT_STRING_new();
    if (algorithm == NULL || bits == NULL) goto done;
    if (X509_ALGOR_set0(algorithm, OBJ_nid2obj(NID_ED25519), V_ASN1_UNDEF, NULL) != 1) goto done;
    if (X509_REQ_set1_signature_algo(request, algorithm) != 1) goto done;
    if (ASN1_BIT_STRING_set(bits, (unsigned char *)signature, 64) != 1) goto done;
    bits->flags &= ~(ASN1_STRING_FLAG_BITS_LEFT | 0x07);
    bits->flags |= ASN1_STRING_FLAG_BITS_LEFT;
    X509_REQ_set0_signature(request, bits);
    bits = NULL;
    // The request as a CA will see it: its signature must verify with its own key.
    if (X509_REQ_verify(request, key) != 1) goto done;
    bio = BIO_new(BIO_s_mem());
    if (bio == NULL || PEM_write_bio_X509_REQ(bio, request) != 1) goto done;
    *der = (unsigned char *)recd_bio_text(bio);
    if (*der == NULL) goto done;
    *der_length = (int)strlen((char *)*der);
    ok = 1;
done:
    if (!ok) {
        free(*der);
        *der = NULL;
        *der_length = 0;
    }
    ERR_clear_error();
    BIO_free(bio);
    ASN1_BIT_STRING_free(bits);
    X509_ALGOR_free(algorithm);
    sk_X509_EXTENSION_pop_free(extensions, X509_EXTENSION_free);
    X509_REQ_free(request);
    EVP_PKEY_free(key);
    return ok;
}

/// The certificates of `pem`, in order, as DER, one after another in *der (malloc'd), each one's
/// length in `lengths` (at most `capacity`); *count how many. The first one's Ed25519 public key
/// into `ed25519` (32 bytes) and *is_ed25519 1 when it has one. 1 when `pem` holds at least one
/// certificate and no more than `capacity`.
static inline int recd_certificate_chain(
    const char *pem, size_t length, unsigned char **der, int *lengths, int capacity, int *count,
    unsigned char *ed25519, int *is_ed25519)
{
    *der = NULL;
    *count = 0;
    *is_ed25519 = 0;
    if (length > 1 << 20) return 0;
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return 0;
    int ok = 1;
    size_t used = 0;
    X509 *certificate;
    while ((certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        int size = i2d_X509(certificate, NULL);
        unsigned char *grown = size > 0 && *count < capacity ? realloc(*der, used + (size_t)size) : NULL;
        if (grown == NULL) {
            X509_free(certificate);
            ok = 0;
            break;
        }
        *der = grown;
        unsigned char *cursor = *der + used;
        i2d_X509(certificate, &cursor);
        if (*count == 0) {
            EVP_PKEY *key = X509_get0_pubkey(certificate);
            size_t key_length = 32;
            if (key != NULL && EVP_PKEY_get_id(key) == EVP_PKEY_ED25519
                && EVP_PKEY_get_raw_public_key(key, ed25519, &key_length) == 1 && key_length == 32)
                *is_ed25519 = 1;
        }
        lengths[*count] = size;
        *count += 1;
        used += (size_t)size;
        X509_free(certificate);
    }
    ERR_clear_error();
    BIO_free(bio);
    if (!ok || *count == 0) {
        free(*der);
        *der = NULL;
        *count = 0;
        return 0;
    }
    return 1;
}

// RFC 3161 time-stamps (OpenSSL's TS API): a query for a SHA-256 digest, and a response checked
// against a digest, a nonce and trusted roots, the way `openssl ts -verify` checks one.

/// Frees what OpenSSL allocated (OPENSSL_free is a macro).
static inline void recd_openssl_free(void *pointer) { OPENSSL_free(pointer); }

/// A DER TimeStampReq (version 1, certReq true) for the SHA-256 `digest` (32 bytes) with `nonce`
/// (a positive big-endian integer). *der is OPENSSL_malloc'd (recd_openssl_free). 1 on success.
static inline int recd_ts_request(
    const unsigned char *digest, const unsigned char *nonce, int nonce_length, unsigned char **der, int *der_length)
{
    int ok = 0;
    *der = NULL;
    *der_length = 0;
    TS_REQ *request = TS_REQ_new();
    TS_MSG_IMPRINT *imprint = TS_MSG_IMPRINT_new();
    X509_ALGOR *algorithm = X509_ALGOR_new();
    BIGNUM *number = BN_bin2bn(nonce, nonce_length, NULL);
    ASN1_INTEGER *nonce_integer = number == NULL ? NULL : BN_to_ASN1_INTEGER(number, NULL);
    if (request == NULL || imprint == NULL || algorithm == NULL || nonce_integer == NULL) goto done;
    if (!TS_REQ_set_version(request, 1)) goto done;
    if (!X509_ALGOR_set0(algorithm, OBJ_nid2obj(NID_sha256), V_ASN1_NULL, NULL)) goto done;
    if (!TS_MSG_IMPRINT_set_algo(imprint, algorithm)) goto done;
    if (!TS_MSG_IMPRINT_set_msg(imprint, (unsigned char *)digest, 32)) goto done;
    if (!TS_REQ_set_msg_imprint(request, imprint)) goto done;
    if (!TS_REQ_set_nonce(request, nonce_integer)) goto done;
    if (!TS_REQ_set_cert_req(request, 1)) goto done;
    int length = i2d_TS_REQ(request, der);
    if (length <= 0) goto done;
    *der_length = length;
    ok = 1;
done:
    ASN1_INTEGER_free(nonce_integer);
    BN_free(number);
    X509_ALGOR_free(algorithm);
    TS_MSG_IMPRINT_free(imprint);
    TS_REQ_free(request);
    return ok;
}

/// What a checked time-stamp says.
struct recd_ts_facts {
    /// genTime, seconds since 1970 (UTC), and its fraction in microseconds when the TSA gave one.
    long long seconds;
    /// The signer's subject (one line) and its certificate's SHA-256.
    char signer[256];
    unsigned char signer_sha256[32];
    /// The serial number as hex (at most 40 digits are kept).
    char serial[48];
};

/// OpenSSL's reasons for the last failure, in words ("message imprint mismatch", "certificate
/// verify error (Verify error:certificate has expired)"), into `error` (512 bytes).
static inline void recd_ts_errors(char *error)
{
    const char *data = NULL;
    int flags = 0;
    unsigned long code;
    while ((code = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        const char *reason = ERR_reason_error_string(code);
        size_t used = strlen(error);
        if (used + 8 >= 512) continue;
        snprintf(error + used, 512 - used, "%s%s%s%s%s", used > 0 ? "; " : "", reason != NULL ? reason : "error",
            (flags & ERR_TXT_STRING) && data != NULL && data[0] != 0 ? " (" : "",
            (flags & ERR_TXT_STRING) && data != NULL ? data : "",
            (flags & ERR_TXT_STRING) && data != NULL && data[0] != 0 ? ")" : "");
    }
}

/// Checks `der` (a whole TimeStampResp, as `openssl ts -reply` writes it and a TSA answers) the
/// way `openssl ts -verify -digest HEX -CAfile FILE` does: granted, version 1, the signature of
/// a signer whose certificate chains to the roots in `ca_file` (NULL: the system's) for
/// time-stamping, checked at the token's own genTime; the imprint SHA-256 and equal to `digest`
/// (32 bytes); the nonce `nonce` when given (length > 0). 1 and `facts` when it holds, else 0
/// and OpenSSL's reasons in `error` (512 bytes). Any bytes: no input traps.
static inline int recd_ts_check(
    const unsigned char *der, long length, const unsigned char *digest, const unsigned char *nonce, int nonce_length,
    const char *ca_file, struct recd_ts_facts *facts, char *error)
{
    int ok = 0;
    error[0] = 0;
    memset(facts, 0, sizeof *facts);
    ERR_clear_error();
    const unsigned char *cursor = der;
    TS_RESP *response = length > 0 && length <= (1 << 20) ? d2i_TS_RESP(NULL, &cursor, length) : NULL;
    TS_VERIFY_CTX *context = NULL;
    X509_STORE *store = NULL;
    BIGNUM *number = NULL;
    ASN1_INTEGER *nonce_integer = NULL;
    ASN1_TIME *epoch = NULL;
    STACK_OF(X509) *signers = NULL;
    if (response == NULL) {
        strcpy(error, "not a time-stamp response (DER TimeStampResp)");
        goto done;
    }
    if (cursor != der + length) {
        strcpy(error, "bytes after the time-stamp response");
        goto done;
    }
    TS_TST_INFO *info = TS_RESP_get_tst_info(response);
    PKCS7 *token = TS_RESP_get_token(response);
    if (info == NULL || token == NULL) {
        strcpy(error, "the TSA granted no time-stamp (its status says rejection or waiting)");
        goto done;
    }
    TS_MSG_IMPRINT *imprint = TS_TST_INFO_get_msg_imprint(info);
    X509_ALGOR *algorithm = imprint == NULL ? NULL : TS_MSG_IMPRINT_get_algo(imprint);
    if (algorithm == NULL || OBJ_obj2nid(algorithm->algorithm) != NID_sha256) {
        strcpy(error, "the imprint is not a SHA-256");
        goto done;
    }
    const ASN1_GENERALIZEDTIME *time = TS_TST_INFO_get_time(info);
    int days = 0, seconds = 0;
    epoch = ASN1_TIME_set(NULL, 0);
    if (time == NULL || epoch == NULL || !ASN1_TIME_diff(&days, &seconds, epoch, time)) {
        strcpy(error, "its time (genTime) is not a time");
        goto done;
    }
    facts->seconds = (long long)days * 86400 + seconds;
    store = X509_STORE_new();
    if (store == NULL) goto done;
    if (ca_file != NULL ? X509_STORE_load_file(store, ca_file) != 1 : X509_STORE_set_default_paths(store) != 1) {
        strcpy(error, "cannot read the trusted TSA roots");
        goto done;
    }
    // The chain is checked as it was when the TSA signed: a certificate that expired later does
    // not undo a stamp it made while valid; one already expired (or not yet valid) then does.
    X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store), (time_t)facts->seconds);
    context = TS_VERIFY_CTX_new();
    if (context == NULL) goto done;
    unsigned char *expected = OPENSSL_memdup(digest, 32);
    if (expected == NULL) goto done;
    TS_VERIFY_CTX_set_imprint(context, expected, 32);
    int flags = TS_VFY_VERSION | TS_VFY_SIGNATURE | TS_VFY_IMPRINT;
    if (nonce_length > 0) {
        // OpenSSL 3.0 has no setter for the expected nonce: compared here.
        number = BN_bin2bn(nonce, nonce_length, NULL);
        nonce_integer = number == NULL ? NULL : BN_to_ASN1_INTEGER(number, NULL);
        const ASN1_INTEGER *answered = TS_TST_INFO_get_nonce(info);
        if (nonce_integer == NULL || answered == NULL || ASN1_INTEGER_cmp(nonce_integer, answered) != 0) {
            strcpy(error, "the nonce is not the one recd sent (a replayed or another query's answer)");
            goto done;
        }
    }
    TS_VERIFY_CTX_set_flags(context, flags);
    TS_VERIFY_CTX_set_store(context, store);
    store = NULL;
    if (TS_RESP_verify_response(context, response) != 1) {
        recd_ts_errors(error);
        if (error[0] == 0) strcpy(error, "the time-stamp does not verify");
        goto done;
    }
    signers = PKCS7_get0_signers(token, NULL, 0);
    X509 *signer = signers != NULL && sk_X509_num(signers) > 0 ? sk_X509_value(signers, 0) : NULL;
    unsigned int size = 0;
    if (signer == NULL || X509_digest(signer, EVP_sha256(), facts->signer_sha256, &size) != 1 || size != 32) {
        strcpy(error, "the time-stamp names no signer certificate");
        goto done;
    }
    X509_NAME_oneline(X509_get_subject_name(signer), facts->signer, sizeof facts->signer);
    const ASN1_INTEGER *serial = TS_TST_INFO_get_serial(info);
    BIGNUM *serial_number = serial == NULL ? NULL : ASN1_INTEGER_to_BN(serial, NULL);
    char *hex = serial_number == NULL ? NULL : BN_bn2hex(serial_number);
    if (hex != NULL) {
        strncpy(facts->serial, hex, sizeof facts->serial - 1);
        OPENSSL_free(hex);
    }
    BN_free(serial_number);
    ok = 1;
done:
    ERR_clear_error();
    sk_X509_free(signers);
    ASN1_TIME_free(epoch);
    ASN1_INTEGER_free(nonce_integer);
    BN_free(number);
    X509_STORE_free(store);
    TS_VERIFY_CTX_free(context);
    TS_RESP_free(response);
    return ok;
}
#endif
