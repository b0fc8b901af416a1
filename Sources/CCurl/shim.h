#ifndef RECD_CCURL_SHIM_H
#define RECD_CCURL_SHIM_H
// libcurl, for the one HTTP request recd makes as a client: a time-stamp query POSTed to a
// time-stamping authority (module PKI only). curl_easy_setopt is variadic, so the whole request
// is one fixed-argument function here: Swift hands in the bytes and limits, gets the answer.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>

/// Where the answer goes: at most `limit` bytes; past that the transfer is cut off.
struct recd_curl_answer {
    unsigned char *data;
    size_t length;
    size_t limit;
    int overflow;
};

static inline size_t recd_curl_write(char *bytes, size_t size, size_t count, void *context)
{
    struct recd_curl_answer *answer = (struct recd_curl_answer *)context;
    size_t length = size * count;
    if (size != 0 && length / size != count) { answer->overflow = 1; return 0; }
    if (length > answer->limit - answer->length) { answer->overflow = 1; return 0; }
    memcpy(answer->data + answer->length, bytes, length);
    answer->length += length;
    return length;
}

static pthread_once_t recd_curl_once = PTHREAD_ONCE_INIT;
static inline void recd_curl_global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/// POSTs `body` to `url` (http or https only, no redirects, no signals: it runs on a worker
/// thread) as `content_type`, accepting `accept`. The answer's body goes into `out` (room for
/// `limit` bytes; *out_length its length), the HTTP status into *status; *overflow is 1 when the
/// answer was longer than `limit`. `ca_file` (NULL: the system's) verifies an https server.
/// Returns libcurl's CURLcode (0: the exchange happened; the status says how it went); `error`
/// (CURL_ERROR_SIZE bytes) gets libcurl's words for a failure.
static inline int recd_curl_post(
    const char *url, const unsigned char *body, long body_length, const char *content_type, const char *accept,
    const char *ca_file, long connect_timeout_ms, long total_timeout_ms, unsigned char *out, size_t limit,
    size_t *out_length, long *status, int *overflow, char *error)
{
    pthread_once(&recd_curl_once, recd_curl_global_init);
    struct recd_curl_answer answer = {out, 0, limit, 0};
    *out_length = 0;
    *status = 0;
    *overflow = 0;
    error[0] = 0;
    CURL *curl = curl_easy_init();
    if (curl == NULL) {
        strncpy(error, "libcurl could not start a transfer", CURL_ERROR_SIZE - 1);
        return CURLE_FAILED_INIT;
    }
    struct curl_slist *headers = NULL;
    char content_header[128];
    char accept_header[128];
    snprintf(content_header, sizeof content_header, "Content-Type: %s", content_type);
    snprintf(accept_header, sizeof accept_header, "Accept: %s", accept);
    headers = curl_slist_append(headers, content_header);
    struct curl_slist *more = headers == NULL ? NULL : curl_slist_append(headers, accept_header);
    int code = CURLE_OUT_OF_MEMORY;
    if (more == NULL) goto done;
    headers = more;
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "recd");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, body_length);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, total_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)limit);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, recd_curl_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
    if (ca_file != NULL) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file);
    code = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    *out_length = answer.length;
    *overflow = answer.overflow || code == CURLE_FILESIZE_EXCEEDED;
done:
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return code;
}
#endif
