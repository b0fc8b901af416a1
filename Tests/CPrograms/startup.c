/* How long a program waits before it can use libaudiosession: dlopen of the library, then its
 * first function, as_session_new, against a real recd (it connects and starts watching).
 *   ./startup LIBRARY SOCKET
 * Prints "startup MS ms (dlopen MS ms)" and "reached recd: NAME" (a call made after the timing:
 * the session really talks to recd); exits 1 when the library or a function is missing. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef void *(*session_new_fn)(const char *, const char *, const char *);
typedef void (*session_free_fn)(void *);
typedef int32_t (*permission_fn)(void *, int32_t *);
typedef const char *(*name_fn)(int32_t);

static double now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: startup LIBRARY SOCKET\n");
        return 2;
    }
    double start = now_ms();
    void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    double loaded = now_ms();
    session_new_fn session_new = (session_new_fn)dlsym(library, "as_session_new");
    session_free_fn session_free = (session_free_fn)dlsym(library, "as_session_free");
    permission_fn record_permission = (permission_fn)dlsym(library, "as_record_permission");
    name_fn error_name = (name_fn)dlsym(library, "as_error_name");
    if (!session_new || !session_free || !record_permission || !error_name) {
        printf("a function is missing\n");
        return 1;
    }
    void *session = session_new("startup", argv[2], NULL);
    double first = now_ms();
    printf("startup %.2f ms (dlopen %.2f ms)\n", first - start, loaded - start);
    int32_t permission = 0;
    printf("reached recd: %s\n", error_name(record_permission(session, &permission)));
    session_free(session);
    return 0;
}
