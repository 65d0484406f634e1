#include <stddef.h>
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
// wrapper per argument kind.
static inline CURLcode ccurl_set_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_set_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_set_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_set_list(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_set_size(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode ccurl_set_callback(CURL *h, CURLoption o, ccurl_data_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_get_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
